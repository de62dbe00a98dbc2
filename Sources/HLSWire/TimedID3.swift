import ICYWire

/// What an HLS timed-metadata ID3 tag says (Apple's "Timed Metadata for HTTP Live Streaming"):
/// the transport timestamp of a packed-audio segment and the title, artist and user texts.
///
/// Pure and bounded: frames are read from the tag's own bytes without inflating anything
/// (compressed or encrypted frames are skipped, so a zlib bomb costs nothing), texts are cut at
/// `maxTextBytes`, and at most `maxFrames` frames are looked at.
package struct TimedID3: Sendable, Hashable {
    /// PRIV `com.apple.streaming.transportStreamTimestamp`: the 33-bit 90 kHz MPEG-2 timestamp
    /// of the segment's first sample (packed audio only).
    package var transportTimestamp: UInt64?
    /// TIT2.
    package var title: String?
    /// TPE1.
    package var artist: String?
    /// TXXX frames: (description, value).
    package var userTexts: [UserText] = []

    package struct UserText: Sendable, Hashable {
        package var description: String
        package var value: String
    }

    package static let maxFrames = 64
    package static let maxTextBytes = 1024
    /// Timed-metadata tags are a few hundred bytes; a larger one is not read at all.
    package static let maxTagLength = 256 * 1024

    package static let transportTimestampOwner = "com.apple.streaming.transportStreamTimestamp"

    package init(transportTimestamp: UInt64? = nil, title: String? = nil, artist: String? = nil, userTexts: [UserText] = []) {
        self.transportTimestamp = transportTimestamp
        self.title = title
        self.artist = artist
        self.userTexts = userTexts
    }

    /// The title as one stream title, `Artist - Title`, when the tag has either.
    package var streamTitle: String? {
        switch (artist, title) {
        case let (artist?, title?): "\(artist) - \(title)"
        case let (nil, title?): title
        case let (artist?, nil): artist
        case (nil, nil): nil
        }
    }

    /// Reads a whole tag (header included). Nil when it is not an ID3v2.3/2.4 tag, is longer than
    /// `maxTagLength`, or is cut short; frames that are malformed end the reading there.
    package init?(tag bytes: some Collection<UInt8>) {
        guard let header = ID3v2Header(bytes), header.majorVersion >= 3,
              header.totalLength <= Self.maxTagLength, bytes.count >= header.totalLength else { return nil }
        var body = Array(bytes.dropFirst(ID3v2Header.headerLength).prefix(header.tagSize))
        // v2.3 unsynchronises the whole tag; v2.4 marks it per frame (also handled below).
        if header.majorVersion == 3, header.flags & 0x80 != 0 { body = ID3Unsynchronisation.removed(from: body) }
        var offset = 0
        if header.flags & 0x40 != 0 {  // extended header: skip it
            guard body.count >= 4 else { return nil }
            let size = header.majorVersion == 4
                ? Self.syncsafe(body[0], body[1], body[2], body[3])
                : Self.bigEndian(body[0], body[1], body[2], body[3]) + 4
            guard size >= 4, size <= body.count else { return nil }
            offset = size
        }
        self.init()
        var frames = 0
        while offset + 10 <= body.count, frames < Self.maxFrames {
            let id = body[offset..<offset + 4]
            guard id.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) }) else { break }  // padding or junk
            let size = header.majorVersion == 4
                ? Self.syncsafe(body[offset + 4], body[offset + 5], body[offset + 6], body[offset + 7])
                : Self.bigEndian(body[offset + 4], body[offset + 5], body[offset + 6], body[offset + 7])
            let formatFlags = body[offset + 9]
            let contentStart = offset + 10
            guard size >= 0, size <= body.count - contentStart else { break }
            var content = Array(body[contentStart..<contentStart + size])
            offset = contentStart + size
            frames += 1
            let compressedOrEncrypted = header.majorVersion == 4 ? formatFlags & 0x0C != 0 : formatFlags & 0xC0 != 0
            if compressedOrEncrypted { continue }
            if header.majorVersion == 4 {
                if formatFlags & 0x02 != 0 { content = ID3Unsynchronisation.removed(from: content) }
                if formatFlags & 0x01 != 0 {  // data length indicator: 4 bytes before the content
                    guard content.count >= 4 else { continue }
                    content.removeFirst(4)
                }
            }
            read(frame: String(decoding: id, as: UTF8.self), content: content)
        }
    }

    private mutating func read(frame id: String, content: [UInt8]) {
        switch id {
        case "PRIV":
            guard let nul = content.firstIndex(of: 0) else { return }
            let owner = String(decoding: content[..<nul], as: UTF8.self)
            let data = content[(nul + 1)...]
            // 8 bytes, big-endian; only the low 33 bits are the timestamp.
            if owner == Self.transportTimestampOwner, data.count == 8 {
                transportTimestamp = data.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } & 0x1_FFFF_FFFF
            }
        case "TIT2":
            title = Self.texts(content).first.flatMap { $0.isEmpty ? nil : $0 }
        case "TPE1":
            artist = Self.texts(content).first.flatMap { $0.isEmpty ? nil : $0 }
        case "TXXX":
            let texts = Self.texts(content)
            if texts.count >= 2, userTexts.count < 16 {
                userTexts.append(UserText(description: texts[0], value: texts[1]))
            }
        default:
            break
        }
    }

    /// A text frame's strings: encoding byte, then NUL-separated strings in that encoding.
    static func texts(_ content: [UInt8]) -> [String] {
        guard let encoding = content.first else { return [] }
        let body = content.dropFirst()
        let isWide = encoding == 1 || encoding == 2
        var strings: [String] = []
        var start = body.startIndex
        var index = start
        let step = isWide ? 2 : 1
        while index < body.endIndex, strings.count < 4 {
            let isTerminator = isWide
                ? index + 1 < body.endIndex && body[index] == 0 && body[index + 1] == 0
                : body[index] == 0
            if isTerminator {
                strings.append(decode(body[start..<index], encoding: encoding))
                index += step
                start = index
            } else {
                index += step
            }
        }
        if start < body.endIndex, strings.count < 4 {
            strings.append(decode(body[start..<min(index, body.endIndex)], encoding: encoding))
        }
        return strings
    }

    private static func decode(_ bytes: ArraySlice<UInt8>, encoding: UInt8) -> String {
        let bytes = bytes.prefix(maxTextBytes * (encoding == 1 || encoding == 2 ? 2 : 1))
        switch encoding {
        case 0:
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        case 1, 2:
            var units: [UInt16] = []
            units.reserveCapacity(bytes.count / 2)
            var index = bytes.startIndex
            var bigEndian = encoding == 2
            if encoding == 1, bytes.count >= 2 {
                if bytes[index] == 0xFF, bytes[index + 1] == 0xFE { bigEndian = false; index += 2 }
                else if bytes[index] == 0xFE, bytes[index + 1] == 0xFF { bigEndian = true; index += 2 }
            }
            while index + 1 < bytes.endIndex {
                let (high, low) = bigEndian ? (bytes[index], bytes[index + 1]) : (bytes[index + 1], bytes[index])
                units.append(UInt16(high) << 8 | UInt16(low))
                index += 2
            }
            return String(decoding: units, as: UTF16.self)
        default:
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func syncsafe(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Int {
        Int(a & 0x7F) << 21 | Int(b & 0x7F) << 14 | Int(c & 0x7F) << 7 | Int(d & 0x7F)
    }

    private static func bigEndian(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Int {
        Int(a) << 24 | Int(b) << 16 | Int(c) << 8 | Int(d)
    }
}

/// The ID3 tag a packed-audio segment (`.aac`, `.mp3`) starts with, and where its audio begins.
struct PackedAudioSegmentHead: Sendable, Hashable {
    package var metadata: TimedID3
    /// Bytes of the segment before the first audio byte (the tag, footer included).
    package var audioOffset: Int

    package enum Failure: Error, Sendable, Hashable {
        /// The segment does not start with an ID3 tag (RFC 8216 3.4 requires one).
        case noTag
        /// The tag is larger than `TimedID3.maxTagLength`.
        case tagTooLarge(length: Int)
        /// The tag cannot be read.
        case malformedTag(length: Int)
    }

    /// From the segment's first bytes: nil while they are fewer than the tag (read the header's
    /// `totalLength` first, then call again); `.noTag` at once when the first 10 bytes are no header.
    package static func read(_ bytes: some Collection<UInt8>) -> Result<PackedAudioSegmentHead, Failure>? {
        guard bytes.count >= ID3v2Header.headerLength else { return nil }
        guard let header = ID3v2Header(bytes) else { return .failure(.noTag) }
        guard header.totalLength <= TimedID3.maxTagLength else { return .failure(.tagTooLarge(length: header.totalLength)) }
        guard bytes.count >= header.totalLength else { return nil }
        guard let metadata = TimedID3(tag: bytes.prefix(header.totalLength)) else { return .failure(.malformedTag(length: header.totalLength)) }
        return .success(PackedAudioSegmentHead(metadata: metadata, audioOffset: header.totalLength))
    }
}
