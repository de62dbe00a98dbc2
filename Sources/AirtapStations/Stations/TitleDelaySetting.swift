import AirtapSupport

/// How a recording treats a station's title delay (`--title-delay`, the station's `titleDelay`).
package enum TitleDelaySetting: Sendable, Hashable {
    /// The largest delay a station may have, learned or set: the split search holds audio back
    /// for this much, and no further.
    package static let maximumSeconds = 5.0

    /// Learn it from the boundaries the audio shows, and use it once it is consistent.
    case auto
    /// Neither learn nor use one: cut around the title as it arrives.
    case off
    /// Seconds the station's titles come late (negative: early), set by hand.
    case fixed(Double)

    /// `auto`, `off`, or seconds (`2.5`, `-3`, `2500ms`).
    package static func parse(_ text: String) throws(AirtapError) -> TitleDelaySetting {
        let text = text.trimmingSpaces().lowercased()
        switch text {
        case "auto": return .auto
        case "off", "none": return .off
        default:
            var body = Substring(text)
            var sign = 1.0
            if let first = body.first, first == "-" || first == "+" {
                sign = first == "-" ? -1 : 1
                body = body.dropFirst()
            }
            let (number, scale): (Substring, Double) =
                if body.hasSuffix("ms") { (body.dropLast(2), 0.001) }
                else if body.hasSuffix("s") { (body.dropLast(), 1) }
                else { (body, 1) }
            // The sign was taken above: a second one ("+-100") would slip past the bound.
            guard let value = Double(number), value.isFinite, value >= 0, value * scale <= Self.maximumSeconds else {
                throw .usage("--title-delay takes auto, off or seconds within ±\(Int(Self.maximumSeconds)) (e.g. 2.5 for titles 2.5 s late)")
            }
            return .fixed(sign * value * scale)
        }
    }
}
