/// The header of one ADTS frame, the self-synchronising framing of AAC streams (audio/aac, audio/aacp).
///
/// Layout: 12-bit sync 0xFFF, MPEG id, 2-bit layer (always 0), protection-absent bit, 2-bit profile,
/// 4-bit sampling index, private bit, 3-bit channel configuration, 4 flag bits, 13-bit frame length,
/// 11-bit buffer fullness, 2-bit raw-data-block count minus one; then a 16-bit CRC when protected.
package struct ADTSHeader: Sendable, Hashable {
    /// MPEG-4 audio object type: 1 Main, 2 LC, 3 SSR, 4 LTP (the wire stores it minus one).
    package var profile: Int { Int(storedProfile) }
    package var sampleRate: Int { Int(storedSampleRate) }
    /// 1...6 are that many channels, 7 is 7.1 (eight channels), 0 means "described in the payload".
    package var channelConfiguration: Int { Int(storedChannelConfiguration) }
    /// The whole frame in bytes, header (and CRC) included.
    package var frameLength: Int { Int(storedFrameLength) }
    /// Number of AAC raw data blocks in the frame (1...4); the wire stores it minus one.
    package var rawDataBlocks: Int { Int(storedRawDataBlocks) }
    // Stored in the widths the wire gives them: every packet a recorder holds carries its
    // header, so its size is paid per frame (a station's split search holds hundreds).
    private let storedProfile: UInt8
    private let storedSampleRate: UInt32
    private let storedChannelConfiguration: UInt8
    private let storedFrameLength: UInt16
    private let storedRawDataBlocks: UInt8
    package let hasCRC: Bool
    /// True for the MPEG-2 id bit, false for MPEG-4; both carry the same AAC payload.
    package let isMPEG2: Bool

    /// 7 bytes, or 9 when a CRC follows.
    package var headerLength: Int { hasCRC ? 9 : 7 }
    package var samplesPerFrame: Int { 1024 * rawDataBlocks }

    /// The channel count, 0 when the configuration is carried in the payload (config 0).
    package var channels: Int {
        switch channelConfiguration {
        case 7: 8
        default: channelConfiguration
        }
    }

    /// Reads the first 7 bytes; `nil` if there are fewer, or no sync, layer not 0, a reserved
    /// sampling index (13...15), or a frame length shorter than its own header.
    package init?(_ bytes: some Collection<UInt8>) {
        var iterator = bytes.makeIterator()
        guard let b0 = iterator.next(), let b1 = iterator.next(), let b2 = iterator.next(),
              let b3 = iterator.next(), let b4 = iterator.next(), let b5 = iterator.next(),
              let b6 = iterator.next() else { return nil }
        self.init(b0, b1, b2, b3, b4, b5, b6)
    }

    init?(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, _ b4: UInt8, _ b5: UInt8, _ b6: UInt8) {
        guard b0 == 0xFF, b1 & 0xF6 == 0xF0 else { return nil }
        let sampleRateIndex = Int((b2 >> 2) & 0x0F)
        guard sampleRateIndex < Self.sampleRates.count else { return nil }
        let hasCRC = b1 & 0x01 == 0
        let frameLength = Int(b3 & 0x03) << 11 | Int(b4) << 3 | Int(b5 >> 5)
        guard frameLength >= (hasCRC ? 9 : 7) else { return nil }

        self.storedProfile = (b2 >> 6) + 1
        self.storedSampleRate = Self.sampleRates[sampleRateIndex]
        self.storedChannelConfiguration = (b2 & 0x01) << 2 | b3 >> 6
        self.storedFrameLength = UInt16(frameLength)
        self.storedRawDataBlocks = (b6 & 0x03) + 1
        self.hasCRC = hasCRC
        self.isMPEG2 = b1 & 0x08 != 0
    }

    private static let sampleRates: [UInt32] = [
        96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
    ]
}
