import ICYWire

/// How much an in-stream ID3v2 tag may make libid3tag allocate. A compressed frame (v2.3 and
/// v2.4 allow zlib per frame) declares its inflated size before its data, and libid3tag
/// allocates that size and inflates into it: a 65 KB tag can declare (and inflate to) 64 MiB
/// of title. The declared sizes are read here, before libid3tag sees the tag.
struct ID3InflationLimits: Sendable, Hashable {
    /// The most one compressed frame may inflate to.
    var maxFrameBytes: Int
    /// The most all compressed frames of one tag may inflate to together.
    var maxTagBytes: Int

    init(maxFrameBytes: Int = 64 * 1024, maxTagBytes: Int = 256 * 1024) {
        self.maxFrameBytes = maxFrameBytes
        self.maxTagBytes = maxTagBytes
    }
}

/// Why a tag is not handed to libid3tag.
package enum ID3TagError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The header or a frame header runs past the tag, or the tag is not ID3v2.2 to 2.4.
    case malformed
    /// An ID3v2.2 tag with its (never defined) whole-tag compression flag set.
    case compressedTag
    /// A compressed v2.4 frame without the data length indicator that declares its size.
    case compressedFrameWithoutSize(frame: String)
    case frameInflatesTooFar(frame: String, declared: Int, limit: Int)
    case tagInflatesTooFar(declared: Int, limit: Int)

    package var description: String {
        switch self {
        case .malformed: "malformed ID3v2 tag"
        case .compressedTag: "compressed ID3v2.2 tag"
        case .compressedFrameWithoutSize(let frame): "compressed \(frame) frame without a declared size"
        case .frameInflatesTooFar(let frame, let declared, let limit):
            "compressed \(frame) frame would inflate to \(declared) bytes (limit \(limit))"
        case .tagInflatesTooFar(let declared, let limit):
            "compressed frames would inflate to \(declared) bytes (limit \(limit))"
        }
    }
}

/// Walks the frame headers of a whole ID3v2 tag (header included) and checks every compressed
/// frame's declared inflated size against `limits`. Pure: reads bytes, allocates only to undo a
/// v2.3 tag's unsynchronisation (a copy no larger than the tag).
enum ID3InflationCheck {
    static func check(_ tag: UnsafeRawBufferPointer, limits: ID3InflationLimits) throws(ID3TagError) {
        guard tag.count >= 10, tag[0] == 0x49, tag[1] == 0x44, tag[2] == 0x33 else { throw .malformed }
        let version = tag[3]
        let flags = tag[5]
        guard let size = syncsafe(tag, at: 6), 10 + size <= tag.count else { throw .malformed }
        switch version {
        case 2:
            if flags & 0x40 != 0 { throw .compressedTag }
        case 3:
            // v2.3 unsynchronises the whole body, frame headers included.
            if flags & 0x80 != 0 {
                let body = ID3Unsynchronisation.removed(from: tag[10..<(10 + size)])
                let checked = body.withUnsafeBytes { raw in
                    Result { () throws(ID3TagError) in try checkFrames(raw, from: 0, version: 3, tagFlags: flags, limits: limits) }
                }
                try checked.get()
            } else {
                try checkFrames(UnsafeRawBufferPointer(rebasing: tag[10..<(10 + size)]), from: 0, version: 3, tagFlags: flags, limits: limits)
            }
        case 4:
            try checkFrames(UnsafeRawBufferPointer(rebasing: tag[10..<(10 + size)]), from: 0, version: 4, tagFlags: flags, limits: limits)
        default:
            throw .malformed
        }
    }

    private static func checkFrames(
        _ body: UnsafeRawBufferPointer, from start: Int, version: UInt8, tagFlags: UInt8, limits: ID3InflationLimits
    ) throws(ID3TagError) {
        var offset = start
        if tagFlags & 0x40 != 0 {
            // Extended header: v2.3 gives its size without the size field, v2.4 (syncsafe) with it.
            if version == 3 {
                guard let size = bigEndian(body, at: offset) else { throw .malformed }
                offset += 4 + size
            } else {
                guard let size = syncsafe(body, at: offset), size >= 6 else { throw .malformed }
                offset += size
            }
            guard offset <= body.count else { throw .malformed }
        }
        var total = 0
        while offset + 10 <= body.count, body[offset] != 0 {
            let id = String(decoding: UnsafeRawBufferPointer(rebasing: body[offset..<(offset + 4)]), as: UTF8.self)
            let frameSize = version == 4 ? syncsafe(body, at: offset + 4) : bigEndian(body, at: offset + 4)
            guard let frameSize, offset + 10 + frameSize <= body.count else { throw .malformed }
            let formatFlags = body[offset + 9]
            let dataStart = offset + 10
            if let declared = try declaredInflatedSize(body, version: version, formatFlags: formatFlags, id: id,
                                                       data: dataStart..<(dataStart + frameSize)) {
                guard declared <= limits.maxFrameBytes else {
                    throw .frameInflatesTooFar(frame: id, declared: declared, limit: limits.maxFrameBytes)
                }
                total += declared
                guard total <= limits.maxTagBytes else { throw .tagInflatesTooFar(declared: total, limit: limits.maxTagBytes) }
            }
            offset = dataStart + frameSize
        }
    }

    /// The inflated size a compressed frame declares; nil for a frame that is not compressed.
    private static func declaredInflatedSize(
        _ body: UnsafeRawBufferPointer, version: UInt8, formatFlags: UInt8, id: String, data: Range<Int>
    ) throws(ID3TagError) -> Int? {
        if version == 3 {
            // v2.3: compression 0x80 puts a 4-byte big-endian inflated size first.
            guard formatFlags & 0x80 != 0 else { return nil }
            guard data.count >= 4, let size = bigEndian(body, at: data.lowerBound) else { throw .malformed }
            return size
        }
        // v2.4: compression 0x08 requires the data length indicator (0x01), a syncsafe size
        // after the group byte (0x40) and the encryption byte (0x04) when present.
        guard formatFlags & 0x08 != 0 else { return nil }
        guard formatFlags & 0x01 != 0 else { throw .compressedFrameWithoutSize(frame: id) }
        let skip = (formatFlags & 0x40 != 0 ? 1 : 0) + (formatFlags & 0x04 != 0 ? 1 : 0)
        guard data.count >= skip + 4, let size = syncsafe(body, at: data.lowerBound + skip) else { throw .malformed }
        return size
    }

    private static func syncsafe(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        var value = 0
        for index in offset..<(offset + 4) {
            guard bytes[index] < 0x80 else { return nil }
            value = value << 7 | Int(bytes[index])
        }
        return value
    }

    private static func bigEndian(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int? {
        guard offset >= 0, offset + 4 <= bytes.count else { return nil }
        return (offset..<(offset + 4)).reduce(0) { $0 << 8 | Int(bytes[$1]) }
    }
}
