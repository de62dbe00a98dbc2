/// The first frame of a recorded MP3 file: a silent Layer III frame that carries a Xing ("Xing"
/// for variable, "Info" for constant bitrate) header with the exact frame and byte counts, so
/// players show the exact duration instead of estimating it from the bitrate.
///
/// The frame matches the audio's version, sample rate and channel mode; its length is fixed when
/// it is made, so a recorder can reserve the room at the start of a file and fill in the counts
/// when the track is complete.
package struct XingFrame: Sendable, Hashable {
    /// The four header bytes of the Xing frame itself.
    package let headerBytes: [UInt8]
    package let length: Int
    private let sideInfoLength: Int

    /// Flags: frame count, byte count, seek table.
    private static let flags: UInt32 = 0x1 | 0x2 | 0x4
    private static let payloadLength = 4 + 4 + 4 + 4 + 100

    /// nil unless `audioHeader` (the first four bytes of an audio frame) is MPEG Layer III.
    package init?(matching audioHeader: some Collection<UInt8>) {
        let bytes = Array(audioHeader.prefix(4))
        guard bytes.count == 4, let audio = MP3FrameHeader(bytes), audio.layer == .layer3 else { return nil }
        sideInfoLength = audio.layer3SideInfoLength
        let needed = 4 + sideInfoLength + Self.payloadLength

        // Same version, layer and sample rate; no CRC, no padding; same channel mode.
        let b1 = bytes[1] | 0x01
        let b3 = bytes[3] & 0xC0
        let firstIndex = Int(bytes[2] >> 4)
        for index in firstIndex...14 {
            let b2 = UInt8(index << 4) | (bytes[2] & 0x0C)
            if let header = MP3FrameHeader(0xFF, b1, b2, b3), header.frameLength >= needed {
                headerBytes = [0xFF, b1, b2, b3]
                length = header.frameLength
                return
            }
        }
        return nil
    }

    /// The whole frame. `frameCount` and `byteCount` describe the audio that follows it (the
    /// byte count includes this frame, as LAME writes it). The seek table is linear, which is
    /// exact for constant bitrate and close for radio's variable-bitrate streams.
    package func render(frameCount: Int, byteCount: Int, isConstantBitrate: Bool) -> [UInt8] {
        var frame = headerBytes
        frame.reserveCapacity(length)
        frame += [UInt8](repeating: 0, count: sideInfoLength)
        frame += Array((isConstantBitrate ? "Info" : "Xing").utf8)
        Self.appendBigEndian(Self.flags, to: &frame)
        Self.appendBigEndian(UInt32(clamping: frameCount), to: &frame)
        Self.appendBigEndian(UInt32(clamping: byteCount + length), to: &frame)
        for point in 0..<100 { frame.append(UInt8(point * 256 / 100)) }
        frame += [UInt8](repeating: 0, count: length - frame.count)
        return frame
    }

    private static func appendBigEndian(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
