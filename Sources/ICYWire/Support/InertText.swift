/// Station text made inert for a terminal or a log: what a station sends (titles, icy-name,
/// genre, URLs, the HTTP reason phrase) can hold ESC sequences that clear the screen, set the
/// window title or write the clipboard (OSC 52), or a newline that forges a whole log line.
/// Every output that shows station text to a person goes through `InertText.render`.
package enum InertText {
    /// `text` with every control character replaced by a visible escape: `\e` (ESC), `\n`,
    /// `\r`, `\t`, `\xHH` for the rest of C0, DEL and C1 (U+0080–U+009F, which some
    /// terminals obey as 8-bit controls), and `\u{HHHH}` for the line and paragraph separators
    /// and the bidirectional overrides (which reorder what follows them on the line). Printable
    /// Unicode stays as it is; a backslash stays a backslash. With `maxUTF8Bytes`, the result
    /// is cut on a character boundary to at most that many bytes, ending in "…".
    package static func render(_ text: some StringProtocol, maxUTF8Bytes: Int? = nil) -> String {
        let escaped = text.unicodeScalars.contains(where: needsEscape) ? escapeAll(text) : String(text)
        guard let maxUTF8Bytes, escaped.utf8.count > maxUTF8Bytes else { return escaped }
        let marker = "…"
        let budget = max(0, maxUTF8Bytes - marker.utf8.count)
        var bytes = 0
        var end = escaped.startIndex
        for index in escaped.indices {
            let next = escaped.index(after: index)
            bytes += escaped.utf8.distance(from: index, to: next)
            guard bytes <= budget else { break }
            end = next
        }
        return String(escaped[..<end]) + marker
    }

    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    private static func escapeAll(_ text: some StringProtocol) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            case "\u{1B}": result += "\\e"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default:
                if scalar.value <= 0xFF {
                    result += "\\x" + hex(scalar.value, digits: 2)
                } else {
                    result += "\\u{" + hex(scalar.value, digits: 4) + "}"
                }
            }
        }
        return result
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
