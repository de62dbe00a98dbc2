/// Where a JSON text first goes wrong, as a byte offset, for "line 3, column 7" in the message
/// about a broken stations.json. JSONDecoder says only "not valid JSON" (and JSONSerialization,
/// which named the offset, is not in FoundationEssentials). RFC 8259, plus the trailing commas
/// JSONDecoder lets through; only ever asked about a text JSONDecoder has already rejected.
enum JSONSyntax {
    /// The offset of the first byte that cannot be there (the length of the text when it ends
    /// too early), or nil when the text is well formed.
    static func firstErrorOffset(in bytes: some Collection<UInt8>) -> Int? {
        var scanner = Scanner(bytes: Array(bytes))
        do {
            scanner.skipSpace()
            try scanner.value(depth: 0)
            scanner.skipSpace()
            return scanner.position < scanner.bytes.count ? scanner.position : nil
        } catch {
            return error.offset
        }
    }

    fileprivate struct Failure: Error {
        let offset: Int
    }

    fileprivate struct Scanner {
        let bytes: [UInt8]
        var position = 0

        var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipSpace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
        }

        func failure() -> Failure { Failure(offset: position) }

        mutating func expect(_ byte: UInt8) throws(Failure) {
            guard current == byte else { throw failure() }
            position += 1
        }

        mutating func value(depth: Int) throws(Failure) {
            guard let byte = current, depth < 512 else { throw failure() }
            switch byte {
            case UInt8(ascii: "{"): try container(depth: depth, close: UInt8(ascii: "}"), isObject: true)
            case UInt8(ascii: "["): try container(depth: depth, close: UInt8(ascii: "]"), isObject: false)
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
            default: throw failure()
            }
        }

        mutating func container(depth: Int, close: UInt8, isObject: Bool) throws(Failure) {
            position += 1
            skipSpace()
            if current == close { position += 1; return }
            while true {
                if isObject {
                    guard current == UInt8(ascii: "\"") else { throw failure() }
                    try string()
                    skipSpace()
                    try expect(UInt8(ascii: ":"))
                    skipSpace()
                }
                try value(depth: depth + 1)
                skipSpace()
                if current == close { position += 1; return }
                try expect(UInt8(ascii: ","))
                skipSpace()
                if current == close { position += 1; return }  // a trailing comma
            }
        }

        mutating func literal(_ word: String) throws(Failure) {
            for byte in word.utf8 { try expect(byte) }
        }

        mutating func string() throws(Failure) {
            position += 1
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    position += 1
                    return
                case UInt8(ascii: "\\"):
                    position += 1
                    guard let escaped = current else { throw failure() }
                    if escaped == UInt8(ascii: "u") {
                        position += 1
                        for _ in 0..<4 {
                            guard let digit = current, digit.isHexDigit else { throw failure() }
                            position += 1
                        }
                    } else {
                        guard Array("\"\\/bfnrt".utf8).contains(escaped) else { throw failure() }
                        position += 1
                    }
                case 0..<0x20:
                    throw failure()
                default:
                    position += 1
                }
            }
            throw failure()
        }

        mutating func number() throws(Failure) {
            if current == UInt8(ascii: "-") { position += 1 }
            if current == UInt8(ascii: "0") {
                position += 1
            } else {
                try digits()
            }
            if current == UInt8(ascii: ".") {
                position += 1
                try digits()
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                position += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
                try digits()
            }
        }

        mutating func digits() throws(Failure) {
            guard let first = current, first.isDigit else { throw failure() }
            while let byte = current, byte.isDigit { position += 1 }
        }
    }
}

extension UInt8 {
    fileprivate var isDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }
    fileprivate var isHexDigit: Bool {
        isDigit || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}

extension JSONSyntax {
    /// Where the top-level "stations" array of a well-formed stations.json is, for editing the
    /// file as text (`airtap add` keeps every other byte as it was).
    struct StationsArray: Equatable {
        /// The offset of `[`.
        let open: Int
        /// The offset of the closing `]`.
        let close: Int
        /// Start and end offsets of each element.
        let elements: [Range<Int>]
    }

    /// nil when the text is not a JSON object with a "stations" array.
    static func stationsArray(in bytes: [UInt8]) -> StationsArray? {
        var scanner = Scanner(bytes: bytes)
        do {
            scanner.skipSpace()
            try scanner.expect(UInt8(ascii: "{"))
            scanner.skipSpace()
            var found: StationsArray?
            while scanner.current == UInt8(ascii: "\"") {
                let keyStart = scanner.position
                try scanner.string()
                let key = bytes[keyStart..<scanner.position]
                scanner.skipSpace()
                try scanner.expect(UInt8(ascii: ":"))
                scanner.skipSpace()
                // JSONDecoder takes the last of duplicate keys; so does this.
                if key.elementsEqual(Array("\"stations\"".utf8)), scanner.current == UInt8(ascii: "[") {
                    found = try scanner.arrayElements()
                } else {
                    try scanner.value(depth: 1)
                }
                scanner.skipSpace()
                guard scanner.current == UInt8(ascii: ",") else { break }
                scanner.position += 1
                scanner.skipSpace()
            }
            try scanner.expect(UInt8(ascii: "}"))
            return found
        } catch {
            return nil
        }
    }
}

extension JSONSyntax.Scanner {
    /// At `[`: scans the array, returning where it and each element are.
    fileprivate mutating func arrayElements() throws(JSONSyntax.Failure) -> JSONSyntax.StationsArray {
        let open = position
        position += 1
        var elements: [Range<Int>] = []
        skipSpace()
        while current != UInt8(ascii: "]") {
            let start = position
            try value(depth: 1)
            elements.append(start..<position)
            skipSpace()
            if current == UInt8(ascii: ",") {
                position += 1
                skipSpace()
            } else {
                guard current == UInt8(ascii: "]") else { throw failure() }
            }
        }
        let close = position
        position += 1
        return JSONSyntax.StationsArray(open: open, close: close, elements: elements)
    }
}
