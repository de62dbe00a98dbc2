/// `%XX` escapes in URL parts, decoded: one decoder for the user and password of a station URL
/// (lenient, as curl reads them) and the path of a request to the relay (strict: a path that is
/// not valid matches no mount).
package enum PercentDecoding {
    /// Lenient: a `%` not followed by two hex digits stays as it is; invalid UTF-8 is repaired.
    package static func lenient(_ text: some StringProtocol) -> String {
        String(decoding: decodedBytes(text, strict: false) ?? Array(text.utf8), as: UTF8.self)
    }

    /// Strict: nil for a malformed escape or bytes that are not UTF-8.
    package static func strict(_ text: some StringProtocol) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        return decodedBytes(text, strict: true).flatMap { String(validating: $0, as: UTF8.self) }
    }

    private static func decodedBytes(_ text: some StringProtocol, strict: Bool) -> [UInt8]? {
        let bytes = Array(text.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%") {
                if index + 2 < bytes.count, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                    decoded.append(high << 4 | low)
                    index += 3
                    continue
                }
                if strict { return nil }
            }
            decoded.append(bytes[index])
            index += 1
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
