/// The 4-byte header that starts every MPEG-1/2/2.5 audio frame (Layer I, II or III).
///
/// Construction validates the header: a failable init returns `nil` for anything a
/// decoder could not play, so a framer can use it as its sync test.
package struct MP3FrameHeader: Sendable, Hashable {
    package enum Version: Sendable, Hashable { case mpeg1, mpeg2, mpeg25 }
    package enum Layer: Sendable, Hashable { case layer1, layer2, layer3 }
    enum ChannelMode: Sendable, Hashable { case stereo, jointStereo, dualChannel, mono }

    package let version: Version
    package let layer: Layer
    /// Nominal bitrate in bits per second.
    package var bitrate: Int { Int(storedBitrate) }
    package var sampleRate: Int { Int(storedSampleRate) }
    // Stored narrow: every packet a recorder holds carries its header, so its size is paid per
    // frame (a station's split search holds hundreds).
    private let storedBitrate: UInt32
    private let storedSampleRate: UInt32
    package let hasPadding: Bool
    /// The protection bit is inverted on the wire: 0 means a 16-bit CRC follows the header.
    package let hasCRC: Bool
    let channelMode: ChannelMode

    package var channels: Int { channelMode == .mono ? 1 : 2 }

    /// Layer III side information after the header (and CRC): where a Xing/Info tag starts.
    package var layer3SideInfoLength: Int {
        let stereo = channelMode != .mono
        return version == .mpeg1 ? (stereo ? 32 : 17) : (stereo ? 17 : 9)
    }

    package var samplesPerFrame: Int {
        switch layer {
        case .layer1: 384
        case .layer2: 1152
        // MPEG-2 and 2.5 halve the granules per frame in Layer III only.
        case .layer3: version == .mpeg1 ? 1152 : 576
        }
    }

    /// The whole frame in bytes, header included.
    package var frameLength: Int {
        switch layer {
        case .layer1:
            // Layer I counts in 4-byte slots, padding included.
            return (12 * bitrate / sampleRate + (hasPadding ? 1 : 0)) * 4
        case .layer2, .layer3:
            return samplesPerFrame / 8 * bitrate / sampleRate + (hasPadding ? 1 : 0)
        }
    }

    /// Returns `nil` when there is no sync word, the version or layer is reserved, the frame
    /// is free-format (bitrate index 0, length unknown), the bitrate index is 15, the sample
    /// rate index is reserved, or the emphasis is the reserved value 2.
    package init?(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) {
        guard b0 == 0xFF, b1 & 0xE0 == 0xE0 else { return nil }

        let version: Version
        switch (b1 >> 3) & 0x03 {
        case 0b00: version = .mpeg25
        case 0b10: version = .mpeg2
        case 0b11: version = .mpeg1
        default: return nil
        }

        let layer: Layer
        switch (b1 >> 1) & 0x03 {
        case 0b01: layer = .layer3
        case 0b10: layer = .layer2
        case 0b11: layer = .layer1
        default: return nil
        }

        let bitrateIndex = Int(b2 >> 4)
        let sampleRateIndex = Int((b2 >> 2) & 0x03)
        guard bitrateIndex != 0, bitrateIndex != 15, sampleRateIndex != 3, b3 & 0x03 != 0b10 else {
            return nil
        }

        let kbps = Self.kilobitsPerSecond(version: version, layer: layer, index: bitrateIndex)
        let baseRate = Self.mpeg1SampleRates[sampleRateIndex]
        let sampleRate: Int
        switch version {
        case .mpeg1: sampleRate = baseRate
        case .mpeg2: sampleRate = baseRate / 2
        case .mpeg25: sampleRate = baseRate / 4
        }

        let channelMode: ChannelMode
        switch b3 >> 6 {
        case 0b00: channelMode = .stereo
        case 0b01: channelMode = .jointStereo
        case 0b10: channelMode = .dualChannel
        default: channelMode = .mono
        }

        self.version = version
        self.layer = layer
        self.storedBitrate = UInt32(kbps * 1000)
        self.storedSampleRate = UInt32(sampleRate)
        self.hasPadding = b2 & 0x02 != 0
        self.hasCRC = b1 & 0x01 == 0
        self.channelMode = channelMode
    }

    /// Reads the first four bytes; `nil` if there are fewer or they are not a valid header.
    package init?<C: Collection<UInt8>>(_ bytes: C) {
        var iterator = bytes.makeIterator()
        guard let b0 = iterator.next(), let b1 = iterator.next(),
              let b2 = iterator.next(), let b3 = iterator.next() else { return nil }
        self.init(b0, b1, b2, b3)
    }

    private static let mpeg1SampleRates = [44100, 48000, 32000]

    // Index 0 (free format) and 15 (bad) are rejected before lookup; the zero keeps indexes aligned.
    private static let mpeg1Layer1 = [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
    private static let mpeg1Layer2 = [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
    private static let mpeg1Layer3 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    private static let mpeg2Layer1 = [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
    private static let mpeg2Layer23 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]

    private static func kilobitsPerSecond(version: Version, layer: Layer, index: Int) -> Int {
        switch (version, layer) {
        case (.mpeg1, .layer1): mpeg1Layer1[index]
        case (.mpeg1, .layer2): mpeg1Layer2[index]
        case (.mpeg1, .layer3): mpeg1Layer3[index]
        case (_, .layer1): mpeg2Layer1[index]
        case (_, _): mpeg2Layer23[index]
        }
    }
}
