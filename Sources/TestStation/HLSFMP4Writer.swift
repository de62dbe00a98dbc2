/// fMP4 (CMAF-style) HLS segments for one audio track: the initialization segment (`ftyp`,
/// `moov` with an `mp4a`/`esds` sample entry and `mvex`) and media segments (`emsg` with timed
/// ID3, then `moof` + `mdat`), written box by box from ISO/IEC 14496-12 and -14.
struct HLSFMP4Writer: Sendable {
    package enum Codec: Sendable {
        /// AAC: the AudioSpecificConfig's three fields, taken from an ADTS header.
        case aac(objectType: Int, frequencyIndex: Int, channelConfiguration: Int)
        case mp3
    }

    let codec: Codec
    let sampleRate: Int
    let channels: Int
    let samplesPerFrame: Int
    static let trackID = 1

    package init(codec: Codec, sampleRate: Int, channels: Int, samplesPerFrame: Int) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.samplesPerFrame = samplesPerFrame
    }

    /// The `#EXT-X-MAP` resource.
    package func initSegment() -> [UInt8] {
        let ftyp = box("ftyp", Array("iso6".utf8) + be32(0) + Array("iso6cmfcmp41".utf8))
        let mvhd = fullBox("mvhd", version: 0, flags: 0, be32(0) + be32(0) + be32(sampleRate) + be32(0) + be32(0x0001_0000) + be16(0x0100)
            + [UInt8](repeating: 0, count: 10) + matrix + [UInt8](repeating: 0, count: 24) + be32(Self.trackID + 1))
        let tkhd = fullBox("tkhd", version: 0, flags: 3, be32(0) + be32(0) + be32(Self.trackID) + be32(0) + be32(0)
            + [UInt8](repeating: 0, count: 8) + be16(0) + be16(1) + be16(0x0100) + be16(0) + matrix + be32(0) + be32(0))
        let mdhd = fullBox("mdhd", version: 0, flags: 0, be32(0) + be32(0) + be32(sampleRate) + be32(0) + be16(0x55C4) + be16(0))
        let hdlr = fullBox("hdlr", version: 0, flags: 0, be32(0) + Array("soun".utf8) + [UInt8](repeating: 0, count: 12) + Array("SoundHandler".utf8) + [0])
        let dinf = box("dinf", fullBox("dref", version: 0, flags: 0, be32(1) + fullBox("url ", version: 0, flags: 1, [])))
        let stbl = box("stbl", fullBox("stsd", version: 0, flags: 0, be32(1) + sampleEntry())
            + fullBox("stts", version: 0, flags: 0, be32(0)) + fullBox("stsc", version: 0, flags: 0, be32(0))
            + fullBox("stsz", version: 0, flags: 0, be32(0) + be32(0)) + fullBox("stco", version: 0, flags: 0, be32(0)))
        let minf = box("minf", fullBox("smhd", version: 0, flags: 0, be32(0)) + dinf + stbl)
        let trak = box("trak", tkhd + box("mdia", mdhd + hdlr + minf))
        let mvex = box("mvex", fullBox("trex", version: 0, flags: 0, be32(Self.trackID) + be32(1) + be32(samplesPerFrame) + be32(0) + be32(0)))
        return ftyp + box("moov", mvhd + trak + mvex)
    }

    /// A media segment: `events` (ID3 tags with their decode times) as version-1 `emsg` boxes,
    /// then one fragment of `frames` (whole ADTS or MPEG audio frames) from `decodeTime` (ticks
    /// of the sample rate).
    package func mediaSegment(sequenceNumber: Int, decodeTime: UInt64, frames: [ArraySlice<UInt8>],
                              events: [(time: UInt64, id3: [UInt8])]) -> [UInt8] {
        var segment = box("styp", Array("msdh".utf8) + be32(0) + Array("msdhmsix".utf8))
        for (index, event) in events.enumerated() {
            segment += fullBox("emsg", version: 1, flags: 0, be32(sampleRate) + be64(event.time) + be32(0) + be32(sequenceNumber * 16 + index)
                + Array("https://aomedia.org/emsg/ID3".utf8) + [0] + [0] + event.id3)
        }
        // Raw access units: ADTS headers (7 or 9 bytes) come off; MPEG audio frames stay whole.
        let samples: [ArraySlice<UInt8>] = frames.map { frame in
            guard case .aac = codec else { return frame }
            let hasCRC = frame[frame.startIndex + 1] & 0x01 == 0
            return frame.dropFirst(hasCRC ? 9 : 7)
        }
        func moof(dataOffset: Int) -> [UInt8] {
            let trun = fullBox("trun", version: 0, flags: 0x000301, be32(samples.count) + be32(dataOffset)
                + samples.flatMap { be32(samplesPerFrame) + be32($0.count) })
            let traf = box("traf", fullBox("tfhd", version: 0, flags: 0x020000, be32(Self.trackID))
                + fullBox("tfdt", version: 1, flags: 0, be64(decodeTime)) + trun)
            return box("moof", fullBox("mfhd", version: 0, flags: 0, be32(sequenceNumber + 1)) + traf)
        }
        let moofLength = moof(dataOffset: 0).count
        segment += moof(dataOffset: moofLength + 8)
        segment += box("mdat", samples.flatMap { $0 })
        return segment
    }

    private func sampleEntry() -> [UInt8] {
        let objectType: UInt8
        var specificInfo: [UInt8] = []
        switch codec {
        case let .aac(type, frequency, channels):
            objectType = 0x40
            let config = UInt16(type) << 11 | UInt16(frequency) << 7 | UInt16(channels) << 3
            specificInfo = [0x05, 2, UInt8(config >> 8), UInt8(config & 0xFF)]
        case .mp3:
            objectType = 0x6B
        }
        let decoderConfig: [UInt8] = [0x04, UInt8(13 + specificInfo.count), objectType, 0x15] + [0, 0, 0] + be32(0) + be32(0) + specificInfo
        let slConfig: [UInt8] = [0x06, 1, 0x02]
        let esDescriptor: [UInt8] = [0x03, UInt8(3 + decoderConfig.count + slConfig.count)] + be16(Self.trackID) + [0] + decoderConfig + slConfig
        let esds = fullBox("esds", version: 0, flags: 0, esDescriptor)
        return box("mp4a", [UInt8](repeating: 0, count: 6) + be16(1) + [UInt8](repeating: 0, count: 8) + be16(channels) + be16(16)
            + be16(0) + be16(0) + be32(UInt32(min(sampleRate, 65535)) << 16) + esds)
    }

    private let matrix: [UInt8] = [0x00, 0x01, 0, 0] + [UInt8](repeating: 0, count: 12) + [0x00, 0x01, 0, 0]
        + [UInt8](repeating: 0, count: 12) + [0x40, 0, 0, 0]

    private func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { be32(payload.count + 8) + Array(type.utf8) + payload }

    private func fullBox(_ type: String, version: UInt8, flags: Int, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version, UInt8(flags >> 16 & 0xFF), UInt8(flags >> 8 & 0xFF), UInt8(flags & 0xFF)] + payload)
    }

    private func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    private func be32(_ value: Int) -> [UInt8] { be32(UInt32(truncatingIfNeeded: value)) }
    private func be32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    private func be64(_ value: UInt64) -> [UInt8] { be32(UInt32(value >> 32)) + be32(UInt32(value & 0xFFFF_FFFF)) }
}
