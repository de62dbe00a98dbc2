@testable import ICYWire

/// Synthetic frames: a valid header and deterministic payload bytes that never contain
/// 0xFF, so no false sync hides inside a payload and expectations can be exact.
enum Fixtures {
    struct MPEGParameters {
        var versionBits: UInt8 = 0b11  // MPEG-1
        var layerBits: UInt8 = 0b01  // Layer III
        var bitrateIndex: UInt8 = 9  // 128 kbps for MPEG-1 Layer III
        var sampleRateIndex: UInt8 = 0  // 44100 for MPEG-1
        var padding = false
        var channelModeBits: UInt8 = 0b01  // joint stereo
        var protected = false

        static let mp3_128k_44100 = MPEGParameters()
        static let mpeg2_64k_22050 = MPEGParameters(versionBits: 0b10, bitrateIndex: 8)
        static let layer2_192k_48000 = MPEGParameters(layerBits: 0b10, bitrateIndex: 10, sampleRateIndex: 1)
        static let layer3_192k_44100 = MPEGParameters(bitrateIndex: 11)
    }

    static func mpegHeader(_ p: MPEGParameters) -> [UInt8] {
        [
            0xFF,
            0xE0 | p.versionBits << 3 | p.layerBits << 1 | (p.protected ? 0 : 1),
            p.bitrateIndex << 4 | p.sampleRateIndex << 2 | (p.padding ? 0x02 : 0),
            p.channelModeBits << 6,
        ]
    }

    static func payload(count: Int, seed: Int) -> [UInt8] {
        (0..<max(0, count)).map { UInt8((($0 &* 7) &+ seed * 13) % 255) }
    }

    static func mpegFrame(_ p: MPEGParameters = .mp3_128k_44100, seed: Int = 0) -> [UInt8] {
        let header = mpegHeader(p)
        guard let parsed = MP3FrameHeader(header) else { preconditionFailure("fixture header invalid") }
        return header + payload(count: parsed.frameLength - 4, seed: seed)
    }

    /// `count` 128 kbps frames, padding on every third as an encoder would spread it.
    static func mp3Frames(_ count: Int, seedOffset: Int = 0, _ base: MPEGParameters = .mp3_128k_44100) -> [[UInt8]] {
        (0..<count).map { index in
            var p = base
            p.padding = index % 3 == 2
            return mpegFrame(p, seed: index + seedOffset)
        }
    }

    /// AAC LC, 44.1 kHz, stereo, no CRC.
    static func adtsFrame(length: Int, seed: Int = 0) -> [UInt8] {
        let header: [UInt8] = [
            0xFF, 0xF1,
            0b01 << 6 | 4 << 2 | 0,  // LC (object type 2 stored as 1), 44100, channel config high bit
            2 << 6 | UInt8(length >> 11),  // channel config 2, length high bits
            UInt8((length >> 3) & 0xFF),
            UInt8((length & 0x07) << 5) | 0x1F,  // buffer fullness 0x7FF (VBR)
            0xFC,  // one raw data block
        ]
        return header + payload(count: length - 7, seed: seed)
    }

    /// An ID3v2.4 tag with a syncsafe size and a body free of 0xFF.
    static func id3Tag(bodyLength: Int, seed: Int = 1) -> [UInt8] {
        let size = bodyLength
        let header: [UInt8] = [
            0x49, 0x44, 0x33, 4, 0, 0,
            UInt8((size >> 21) & 0x7F), UInt8((size >> 14) & 0x7F), UInt8((size >> 7) & 0x7F), UInt8(size & 0x7F),
        ]
        return header + payload(count: bodyLength, seed: seed)
    }

    /// Garbage that cannot start a frame or a tag.
    static func garbage(_ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(0x10 + $0 % 0x30) }
    }

    /// Interleaves ICY metadata into `audio` every `metaint` bytes; `blocks` gives the
    /// metadata text for each interval (nil: a 0 length byte), cycling.
    static func icyStream(audio: [UInt8], metaint: Int, blocks: [String?]) -> [UInt8] {
        var stream: [UInt8] = []
        var offset = 0
        var blockIndex = 0
        while offset < audio.count {
            let end = min(offset + metaint, audio.count)
            stream += audio[offset..<end]
            let isWholeInterval = end - offset == metaint
            offset = end
            guard isWholeInterval else { break }
            stream += metadataBlock(blocks.isEmpty ? nil : blocks[blockIndex % blocks.count])
            blockIndex += 1
        }
        return stream
    }

    /// Length byte plus the text padded with NULs to a multiple of 16.
    static func metadataBlock(_ text: String?) -> [UInt8] {
        guard let text else { return [0] }
        var bytes = Array(text.utf8)
        let length = (bytes.count + 15) / 16
        bytes += [UInt8](repeating: 0, count: length * 16 - bytes.count)
        return [UInt8(length)] + bytes
    }
}
