public enum AirtapVersion {
    public static let current = "0.1.0"
    public static let userAgent = "airtap/\(current)"
}

extension Duration {
    /// The duration as a Double number of seconds, for reports.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
