/// Character sets stations use for metadata, by their IANA names.
package enum TextCharset: String, Sendable, CaseIterable {
    case utf8 = "utf-8"
    case latin1 = "iso-8859-1"
    case cp1252 = "windows-1252"
    case cp1251 = "windows-1251"

    /// Accepts the IANA name and the usual aliases, case-insensitively
    /// ("utf8", "latin1", "iso8859-1", "cp1252", "win1251", ...).
    package init?(name: String) {
        let key = String(name.lowercased().filter { $0 != "-" && $0 != "_" && $0 != " " })
        switch key {
        case "utf8": self = .utf8
        case "iso88591", "latin1", "l1", "iso885911987", "cp819", "ibm819": self = .latin1
        case "windows1252", "cp1252", "win1252", "ansi": self = .cp1252
        case "windows1251", "cp1251", "win1251": self = .cp1251
        default: return nil
        }
    }
}

/// A charset decoder supplied from outside this pure layer (glibc's iconv knows hundreds of
/// charsets; ICYWire does no I/O and links no C).
package protocol LegacyTextDecoder: Sendable {
    /// The text, or nil when the bytes are not valid in this charset.
    func decode(_ bytes: [UInt8]) -> String?
}

/// How a station's title bytes become text: UTF-8 when valid, else `custom` when it has one
/// and it accepts the bytes, else the built-in `fallback` code page (which never fails).
package struct TitleDecoding: Sendable {
    package var fallback: TextCharset
    package var custom: (any LegacyTextDecoder)?

    package init(fallback: TextCharset, custom: (any LegacyTextDecoder)? = nil) {
        self.fallback = fallback
        self.custom = custom
    }

    package func decode<C: Collection<UInt8>>(_ bytes: C) -> String {
        if let custom, String(validating: bytes, as: UTF8.self) == nil, let text = custom.decode(Array(bytes)) {
            return text
        }
        return TextDecoding.decode(bytes, fallback: fallback)
    }
}

/// Turns metadata bytes into text when nobody says which charset they are in.
package enum TextDecoding {
    /// Valid UTF-8 is taken as UTF-8 (legacy 8-bit text with high bytes is almost never
    /// valid UTF-8); anything else is decoded with `fallback`, or CP1252 when the fallback
    /// is UTF-8 itself. Never fails: every byte maps to some character.
    package static func decode<C: Collection<UInt8>>(_ bytes: C, fallback: TextCharset) -> String {
        if let text = String(validating: bytes, as: UTF8.self) {
            return text
        }
        switch fallback {
        case .latin1: return decodeSingleByte(bytes) { Unicode.Scalar($0) }
        case .utf8, .cp1252: return decodeSingleByte(bytes, cp1252Scalar)
        case .cp1251: return decodeSingleByte(bytes, cp1251Scalar)
        }
    }

    private static func decodeSingleByte<C: Collection<UInt8>>(
        _ bytes: C, _ scalar: (UInt8) -> Unicode.Scalar
    ) -> String {
        var text = String.UnicodeScalarView()
        for byte in bytes { text.append(scalar(byte)) }
        return String(text)
    }

    private static func cp1252Scalar(_ byte: UInt8) -> Unicode.Scalar {
        guard (0x80...0x9F).contains(byte) else { return Unicode.Scalar(byte) }
        return scalar(cp1252High[Int(byte) - 0x80], orLatin1: byte)
    }

    private static func cp1251Scalar(_ byte: UInt8) -> Unicode.Scalar {
        switch byte {
        case 0x00..<0x80: return Unicode.Scalar(byte)
        case 0x80..<0xC0: return scalar(cp1251High[Int(byte) - 0x80], orLatin1: byte)
        default: return scalar(0x0410 + UInt32(byte) - 0xC0, orLatin1: byte)  // А...я in order
        }
    }

    private static func scalar(_ value: UInt32, orLatin1 byte: UInt8) -> Unicode.Scalar {
        Unicode.Scalar(value) ?? Unicode.Scalar(byte)
    }

    // Bytes the code page leaves undefined map to the C1 control of the same value, as browsers do.
    /// Windows-1252 0x80...0x9F (0xA0...0xFF equal Latin-1).
    private static let cp1252High: [UInt32] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
        0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
        0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
        0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
    ]

    /// Windows-1251 0x80...0xBF (0xC0...0xFF are U+0410...U+044F).
    private static let cp1251High: [UInt32] = [
        0x0402, 0x0403, 0x201A, 0x0453, 0x201E, 0x2026, 0x2020, 0x2021,
        0x20AC, 0x2030, 0x0409, 0x2039, 0x040A, 0x040C, 0x040B, 0x040F,
        0x0452, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
        0x0098, 0x2122, 0x0459, 0x203A, 0x045A, 0x045C, 0x045B, 0x045F,
        0x00A0, 0x040E, 0x045E, 0x0408, 0x00A4, 0x0490, 0x00A6, 0x00A7,
        0x0401, 0x00A9, 0x0404, 0x00AB, 0x00AC, 0x00AD, 0x00AE, 0x0407,
        0x00B0, 0x00B1, 0x0406, 0x0456, 0x0491, 0x00B5, 0x00B6, 0x00B7,
        0x0451, 0x2116, 0x0454, 0x00BB, 0x0458, 0x0405, 0x0455, 0x0457,
    ]
}
