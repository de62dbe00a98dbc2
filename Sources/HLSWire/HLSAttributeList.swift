import ICYWire

/// An RFC 8216 attribute list (section 4.2): `NAME=value` pairs separated by commas, where a
/// value is a decimal or hexadecimal integer, a decimal float, a quoted string (no escapes, no
/// line breaks) or an enumerated token. Kept as text; the typed accessors convert on demand.
struct HLSAttributeList: Sendable, Hashable {
    /// In tag order; a repeated name keeps its first value (what hls.js and ffmpeg read).
    package private(set) var pairs: [(name: String, value: String)] = []

    /// A tag line carries at most this many attributes; the rest are ignored (no real tag has 20).
    package static let maxAttributes = 64

    package init() {}

    /// Reads `text` (the part of a tag after its colon). Malformed pairs (no `=`, an unterminated
    /// quote) end the list there: what came before stays, as players read it.
    package init(_ text: Substring) {
        var rest = text[...]
        while !rest.isEmpty, pairs.count < Self.maxAttributes {
            rest = rest.drop { $0 == " " || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { return }
            let name = trimmed(rest[..<equals])
            rest = rest[rest.index(after: equals)...]
            let value: Substring
            if rest.first == "\"" {
                let body = rest.dropFirst()
                guard let close = body.firstIndex(of: "\"") else { return }
                value = body[..<close]
                rest = body[body.index(after: close)...]
                // Anything between the closing quote and the next comma is not part of the value.
                if let comma = rest.firstIndex(of: ",") { rest = rest[rest.index(after: comma)...] } else { rest = rest[rest.endIndex...] }
            } else {
                let comma = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<comma]
                rest = comma == rest.endIndex ? rest[comma...] : rest[rest.index(after: comma)...]
            }
            if !name.isEmpty, !pairs.contains(where: { $0.name == name }) {
                pairs.append((name, trimmed(value)))
            }
        }
    }

    package subscript(_ name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    /// A decimal integer that fits in an Int (BANDWIDTH and the like).
    package func integer(_ name: String) -> Int? {
        guard let text = self[name], !text.isEmpty, text.utf8.count <= 18, text.allSatisfy(\.isASCIIDigit) else { return nil }
        return Int(text)
    }

    /// A hexadecimal sequence `0x...` of exactly `byteCount` bytes (an IV is 16), zero-padded on
    /// the left when shorter, as the RFC's big-endian integer reading implies.
    package func hexBytes(_ name: String, byteCount: Int) -> [UInt8]? {
        guard let text = self[name], text.hasPrefix("0x") || text.hasPrefix("0X") else { return nil }
        let digits = Array(text.utf8.dropFirst(2))
        guard !digits.isEmpty, digits.count <= byteCount * 2 else { return nil }
        var nibbles: [UInt8] = []
        nibbles.reserveCapacity(byteCount * 2)
        for digit in digits {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(digit - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(digit - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        nibbles.insert(contentsOf: repeatElement(0, count: byteCount * 2 - nibbles.count), at: 0)
        return stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] << 4 | nibbles[$0 + 1] }
    }

    package static func == (a: Self, b: Self) -> Bool {
        a.pairs.map(\.name) == b.pairs.map(\.name) && a.pairs.map(\.value) == b.pairs.map(\.value)
    }

    package func hash(into hasher: inout Hasher) {
        for pair in pairs {
            hasher.combine(pair.name)
            hasher.combine(pair.value)
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
