import ICYWire

/// One ISO BMFF box inside an already-bounded parent.
struct MP4Box {
    let type: String
    let payload: ArraySlice<UInt8>

    /// The boxes laid end to end in `bytes`; each must fit inside it. `depth` bounds nesting so a
    /// box of boxes of boxes cannot recurse without end.
    static func children(of bytes: ArraySlice<UInt8>, depth: Int, limits: FMP4Limits) throws(FMP4Error) -> [MP4Box] {
        guard depth < limits.maxDepth else { throw .tooDeep }
        var boxes: [MP4Box] = []
        var reader = ByteReader(bytes)
        while reader.remaining >= 8 {
            let start = reader.position
            guard var size = reader.uint32().map(Int.init), let type = reader.fourCC() else { break }
            var headerLength = 8
            if size == 1 {
                guard let large = reader.uint64(), large <= UInt64(Int.max / 2) else { throw .malformedBox(type: type) }
                size = Int(large)
                headerLength = 16
            } else if size == 0 {
                size = bytes.endIndex - start
            }
            guard size >= headerLength, size <= bytes.endIndex - start else { throw .malformedBox(type: type) }
            boxes.append(MP4Box(type: type, payload: bytes[start + headerLength..<start + size]))
            reader.position = start + size
        }
        return boxes
    }
}

/// Big-endian reads from a slice that return nil instead of reading past its end.
struct ByteReader {
    let bytes: ArraySlice<UInt8>
    var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - position }
    var rest: ArraySlice<UInt8> { bytes[position...] }

    mutating func skip(_ count: Int) -> Bool {
        guard count >= 0, count <= remaining else { return false }
        position += count
        return true
    }

    mutating func uint8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func bigEndian(_ count: Int) -> UInt64? {
        guard remaining >= count else { return nil }
        defer { position += count }
        return bytes[position..<position + count].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    mutating func uint24() -> UInt32? { bigEndian(3).map { UInt32($0) } }
    mutating func uint32() -> UInt32? { bigEndian(4).map { UInt32($0) } }
    mutating func uint64() -> UInt64? { bigEndian(8) }

    mutating func fourCC() -> String? {
        guard remaining >= 4 else { return nil }
        defer { position += 4 }
        return String(decoding: bytes[position..<position + 4], as: UTF8.self)
    }

    mutating func bytes(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, remaining >= count else { return nil }
        defer { position += count }
        return bytes[position..<position + count]
    }

    /// A NUL-terminated UTF-8 string (at most 1 KiB).
    mutating func cString() -> String? {
        guard let nul = bytes[position...].prefix(1024).firstIndex(of: 0) else { return nil }
        defer { position = nul + 1 }
        return String(decoding: bytes[position..<nul], as: UTF8.self)
    }

    /// An MPEG-4 descriptor length: up to four bytes of 7 bits each.
    mutating func descriptorLength() -> Int? {
        var length = 0
        for _ in 0..<4 {
            guard let byte = uint8() else { return nil }
            length = length << 7 | Int(byte & 0x7F)
            if byte & 0x80 == 0 { return length }
        }
        return length
    }
}

/// MSB-first bit reads.
struct BitReader {
    let bytes: [UInt8]
    var bitPosition = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func read(_ count: Int) -> Int? {
        guard bitPosition + count <= bytes.count * 8 else { return nil }
        var value = 0
        for _ in 0..<count {
            let byte = bytes[bitPosition >> 3]
            value = value << 1 | Int((byte >> (7 - UInt8(bitPosition & 7))) & 1)
            bitPosition += 1
        }
        return value
    }
}
