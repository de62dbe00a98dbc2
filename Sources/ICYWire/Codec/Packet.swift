/// One unit a container reader hands out, header included: a whole MPEG audio or ADTS frame, or
/// a whole Ogg page. Its header says what sinks need (codec, duration, whether it carries stream
/// headers or starts or ends a link); no sink asks which container it came from.
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
