/// The 10-byte header of an ID3v2 tag: "ID3", version, flags, and a syncsafe size.
///
/// Only the header is read here, to find and bound tags in a stream; the frames inside
/// are parsed elsewhere (libid3tag).
package struct ID3v2Header: Sendable, Hashable {
    /// 2, 3 or 4 (ID3v2.2, v2.3, v2.4).
    package let majorVersion: Int
    package let revision: Int
    package let flags: UInt8
    /// Bytes after the header, excluding a footer: the syncsafe size field.
    package let tagSize: Int

    package static let headerLength = 10

    /// Only ID3v2.4 defines a footer (a copy of the header at the end, flag bit 4).
    package var hasFooter: Bool { majorVersion == 4 && flags & 0x10 != 0 }

    /// Header, body and footer.
    package var totalLength: Int { Self.headerLength + tagSize + (hasFooter ? Self.headerLength : 0) }

    /// Reads the first 10 bytes; `nil` if fewer, no "ID3", version outside 2...4,
    /// revision 0xFF, or a size byte with its top bit set (sizes are syncsafe).
    package init?(_ bytes: some Collection<UInt8>) {
        var header: [UInt8] = []
        header.reserveCapacity(Self.headerLength)
        for byte in bytes.prefix(Self.headerLength) { header.append(byte) }
        guard header.count == Self.headerLength else { return nil }
        self.init(byteAt: { header[$0] })
    }

    /// Reads 10 bytes at `offset` without copying; the caller checks they are there.
    init?(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        guard offset >= 0, bytes.count - offset >= Self.headerLength else { return nil }
        self.init(byteAt: { bytes[offset + $0] })
    }

    private init?(byteAt byte: (Int) -> UInt8) {
        guard byte(0) == 0x49, byte(1) == 0x44, byte(2) == 0x33,  // "ID3"
              (2...4).contains(byte(3)), byte(4) != 0xFF,
              byte(6) < 0x80, byte(7) < 0x80, byte(8) < 0x80, byte(9) < 0x80 else { return nil }
        self.majorVersion = Int(byte(3))
        self.revision = Int(byte(4))
        self.flags = byte(5)
        self.tagSize = Int(byte(6)) << 21 | Int(byte(7)) << 14 | Int(byte(8)) << 7 | Int(byte(9))
    }
}

/// A whole ID3v2 tag found in an audio stream (stations insert them between frames).
package struct ID3v2Tag: Sendable {
    /// The whole tag, header (and footer) included; shares the framer's work buffer.
    package let bytes: ArraySlice<UInt8>
    /// Audio-stream byte offset of the tag's first byte.
    package let position: Int
    package let header: ID3v2Header

    package init(bytes: ArraySlice<UInt8>, position: Int, header: ID3v2Header) {
        self.bytes = bytes
        self.position = position
        self.header = header
    }
}
