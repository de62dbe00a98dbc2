package enum AirtapVersion {
    package static let current = "0.1.0"
    package static let userAgent = "airtap/\(current)"
}

extension Duration {
    /// The duration as a Double number of seconds, for reports.
    package var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
