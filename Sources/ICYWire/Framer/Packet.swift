/// One whole audio frame, header included, as the framer found it in the stream.
package struct Packet: Sendable {
    /// Shares storage with the framer's work buffer, so handing out a packet copies nothing.
    /// Being a slice, its indices are not zero-based: use `startIndex` or iterate.
    package let bytes: ArraySlice<UInt8>
    /// Audio-stream byte offset of the first byte: counts every audio byte pushed into the
    /// framer, garbage and tags included (ICY metadata is not audio and is not counted).
    package let position: Int
    package let header: AudioFrameHeader

    package init(bytes: ArraySlice<UInt8>, position: Int, header: AudioFrameHeader) {
        self.bytes = bytes
        self.position = position
        self.header = header
    }

    package var byteRange: Range<Int> { position..<(position + bytes.count) }
    package var sampleCount: Int { header.samplesPerFrame }
    package var duration: Double { header.duration }
}
