/// The fields of one ICY metadata block: `StreamTitle='...';StreamUrl='...';`.
package struct StreamMetadata: Sendable, Hashable {
    package struct Field: Sendable, Hashable {
        package let key: String
        package let value: String

        package init(key: String, value: String) {
            self.key = key
            self.value = value
        }
    }

    /// In block order; keys keep their spelling.
    package let fields: [Field]

    package init(fields: [Field]) {
        self.fields = fields
    }

    /// The first value whose key matches, ignoring case.
    package subscript(key: String) -> String? {
        let wanted = key.lowercased()
        return fields.first { $0.key.lowercased() == wanted }?.value
    }

    /// Present and empty ("") is a real value: stations clear the title for ad breaks.
    package var streamTitle: String? { self["StreamTitle"] }
    package var streamURL: String? { self["StreamUrl"] }

    /// Best effort, never fails. Titles contain `'`, `;` and `=` unescaped, so a quoted
    /// value ends only at a `'` followed by `;` and then another `Key=` or the end of the
    /// text (or at a final `'` with nothing but whitespace after it). The text ends where the
    /// block's NUL padding begins: the NULs at its end. A NUL inside a value is part of it (the
    /// renderers downstream make it inert), so a title is never cut short by its own bytes.
    /// Values are decoded as UTF-8 when valid, else with `charset` (CP1252 when `charset` is UTF-8).
    package static func parse<C: Collection<UInt8>>(_ block: C, charset: TextCharset = .utf8) -> StreamMetadata {
        parse(block, decoding: TitleDecoding(fallback: charset))
    }

    /// As `parse(_:charset:)`, with any charset a `TitleDecoding` knows.
    package static func parse<C: Collection<UInt8>>(_ block: C, decoding: TitleDecoding) -> StreamMetadata {
        // Blocks are padded to a multiple of 16 with NULs.
        var bytes = Array(block)
        while bytes.last == 0 { bytes.removeLast() }
        var parser = FieldParser(bytes: bytes, decoding: decoding)
        return StreamMetadata(fields: parser.parseAll())
    }
}

private struct FieldParser {
    let bytes: [UInt8]
    let decoding: TitleDecoding
    var index = 0

    private static let quote = UInt8(ascii: "'")
    private static let semicolon = UInt8(ascii: ";")
    private static let equals = UInt8(ascii: "=")

    init(bytes: [UInt8], decoding: TitleDecoding) {
        self.bytes = bytes
        self.decoding = decoding
    }

    mutating func parseAll() -> [StreamMetadata.Field] {
        var fields: [StreamMetadata.Field] = []
        while true {
            skipSeparators()
            // A NUL between fields: padding with more bytes after it, which are not fields.
            guard index < bytes.count, bytes[index] != 0 else { return fields }
            if let field = parseField() {
                fields.append(field)
            } else {
                skipPastNextSemicolon()
            }
        }
    }

    private mutating func parseField() -> StreamMetadata.Field? {
        let keyEnd = endOfKey(from: index)
        guard keyEnd > index, keyEnd < bytes.count, bytes[keyEnd] == Self.equals else { return nil }
        let key = String(decoding: bytes[index..<keyEnd], as: UTF8.self)
        let valueStart = keyEnd + 1
        let valueRange: Range<Int>
        if valueStart < bytes.count && bytes[valueStart] == Self.quote {
            valueRange = quotedValue(openingQuoteAt: valueStart)
        } else {
            var end = valueStart
            while end < bytes.count && bytes[end] != Self.semicolon && bytes[end] != 0 { end += 1 }
            valueRange = valueStart..<end
            index = end
        }
        let value = decoding.decode(bytes[valueRange])
        return StreamMetadata.Field(key: key, value: value)
    }

    /// The value's range; moves `index` past the closing quote.
    private mutating func quotedValue(openingQuoteAt opening: Int) -> Range<Int> {
        let start = opening + 1
        var candidate = start
        while candidate < bytes.count {
            if bytes[candidate] == Self.quote && closesValue(quoteAt: candidate) {
                index = candidate + 1
                return start..<candidate
            }
            candidate += 1
        }
        // No proper end: take the rest, minus a dangling quote and semicolon.
        var end = bytes.count
        while end > start && isWhitespace(bytes[end - 1]) { end -= 1 }
        if end > start && bytes[end - 1] == Self.semicolon { end -= 1 }
        if end > start && bytes[end - 1] == Self.quote { end -= 1 }
        index = bytes.count
        return start..<end
    }

    private func closesValue(quoteAt quote: Int) -> Bool {
        var next = quote + 1
        let hasSemicolon = next < bytes.count && bytes[next] == Self.semicolon
        if hasSemicolon { next += 1 }
        // `';` and a NUL: the padding began (whatever follows it is not fields).
        if hasSemicolon && next < bytes.count && bytes[next] == 0 { return true }
        while next < bytes.count && isWhitespace(bytes[next]) { next += 1 }
        if next == bytes.count { return true }
        guard hasSemicolon else { return false }
        let keyEnd = endOfKey(from: next)
        return keyEnd > next && keyEnd < bytes.count && bytes[keyEnd] == Self.equals
    }

    private func endOfKey(from start: Int) -> Int {
        var end = start
        while end < bytes.count && isKeyByte(bytes[end]) { end += 1 }
        return end
    }

    private mutating func skipSeparators() {
        while index < bytes.count && (bytes[index] == Self.semicolon || isWhitespace(bytes[index])) {
            index += 1
        }
    }

    private mutating func skipPastNextSemicolon() {
        while index < bytes.count && bytes[index] != Self.semicolon { index += 1 }
        index += 1
    }

    private func isKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default:
            false
        }
    }

    private func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
