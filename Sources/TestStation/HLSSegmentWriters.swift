/// Writers for the HLS segment containers the test station serves, byte by byte from the
/// specifications (ISO/IEC 13818-1 for MPEG-TS, Apple's "Timed Metadata for HTTP Live Streaming"
/// for the ID3 tags), so a station can serve every variant without ffmpeg at run time.
enum HLSSegmentWriters {
    /// 90 kHz MPEG-2 timestamps.
    package static let clockRate = 90_000

    /// An ID3v2.4 tag as HLS packagers write it: the PRIV transport timestamp (packed audio only)
    /// and TIT2/TPE1 text frames in UTF-8.
    package static func timedID3Tag(transportTimestamp: UInt64?, artist: String?, title: String?) -> [UInt8] {
        var frames: [UInt8] = []
        if let transportTimestamp {
            let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
            let ticks = transportTimestamp & 0x1_FFFF_FFFF
            frames += id3Frame("PRIV", owner + (0..<8).map { UInt8(truncatingIfNeeded: ticks >> (56 - 8 * UInt64($0))) })
        }
        if let title { frames += id3Frame("TIT2", [3] + Array(title.utf8)) }
        if let artist { frames += id3Frame("TPE1", [3] + Array(artist.utf8)) }
        return Array("ID3".utf8) + [4, 0, 0] + syncsafe(frames.count) + frames
    }

    private static func id3Frame(_ id: String, _ content: [UInt8]) -> [UInt8] {
        Array(id.utf8) + syncsafe(content.count) + [0, 0] + content
    }

    private static func syncsafe(_ value: Int) -> [UInt8] {
        [UInt8(value >> 21 & 0x7F), UInt8(value >> 14 & 0x7F), UInt8(value >> 7 & 0x7F), UInt8(value & 0x7F)]
    }

    /// A packed-audio segment (`.aac`, `.mp3`): the timed-metadata tag, then the frames.
    package static func packedAudio(frames: some Sequence<UInt8>, firstSampleTimestamp: UInt64, artist: String?, title: String?) -> [UInt8] {
        timedID3Tag(transportTimestamp: firstSampleTimestamp, artist: artist, title: title) + Array(frames)
    }
}

/// An MPEG transport stream of one program: an audio stream (AAC in ADTS or MPEG audio) on
/// PID 0x100 and, optionally, a timed-ID3 stream (stream_type 0x15) on PID 0x101.
struct MPEGTSWriter {
    package enum Audio: Sendable {
        case aacADTS
        case mpegAudio

        var streamType: UInt8 { self == .aacADTS ? 0x0F : 0x03 }
    }

    static let pmtPID = 0x1000
    static let audioPID = 0x100
    static let metadataPID = 0x101

    let audio: Audio
    let hasTimedMetadata: Bool
    private var counters: [Int: Int] = [:]
    package private(set) var bytes: [UInt8] = []

    /// Starts the segment with a PAT and a PMT, as every HLS TS segment must (RFC 8216 3.2).
    package init(audio: Audio, timedMetadata: Bool) {
        self.audio = audio
        self.hasTimedMetadata = timedMetadata
        writeSection(pid: 0, tableID: 0x00, tableIDExtension: 1, body: [0x00, 0x01, 0xE0 | UInt8(Self.pmtPID >> 8), UInt8(Self.pmtPID & 0xFF)])
        var streams: [UInt8] = [audio.streamType, 0xE0 | UInt8(Self.audioPID >> 8), UInt8(Self.audioPID & 0xFF), 0xF0, 0x00]
        if timedMetadata {
            // metadata_pointer-less ID3 stream: the metadata_descriptor says "ID3 " (format 0xFF, identifier ID3).
            let descriptor: [UInt8] = [0x26, 0x0D, 0xFF, 0xFF, 0x49, 0x44, 0x33, 0x20, 0xFF, 0x49, 0x44, 0x33, 0x20, 0x00, 0x0F]
            streams += [0x15, 0xE0 | UInt8(Self.metadataPID >> 8), UInt8(Self.metadataPID & 0xFF), 0xF0, UInt8(descriptor.count)] + descriptor
        }
        // PCR on the audio PID; no program info.
        let body: [UInt8] = [0xE0 | UInt8(Self.audioPID >> 8), UInt8(Self.audioPID & 0xFF), 0xF0, 0x00] + streams
        writeSection(pid: Self.pmtPID, tableID: 0x02, tableIDExtension: 1, body: body)
    }

    /// One PES of audio frames whose first sample plays at `pts` (90 kHz).
    package mutating func writeAudio(_ frames: some Collection<UInt8>, pts: UInt64) {
        writePES(pid: Self.audioPID, streamID: 0xC0, pts: pts, payload: Array(frames), pcr: true)
    }

    /// A timed-ID3 tag that takes effect at `pts`.
    package mutating func writeTimedMetadata(_ tag: [UInt8], pts: UInt64) {
        precondition(hasTimedMetadata, "the PMT lists no metadata stream")
        writePES(pid: Self.metadataPID, streamID: 0xBD, pts: pts, payload: tag, pcr: false)
    }

    private mutating func writePES(pid: Int, streamID: UInt8, pts: UInt64, payload: [UInt8], pcr: Bool) {
        let ptsBytes: [UInt8] = [
            0x21 | UInt8(truncatingIfNeeded: (pts >> 29) & 0x0E), UInt8(truncatingIfNeeded: pts >> 22),
            UInt8(truncatingIfNeeded: (pts >> 14) & 0xFE) | 1, UInt8(truncatingIfNeeded: pts >> 7), UInt8(truncatingIfNeeded: (pts << 1) & 0xFE) | 1,
        ]
        let length = 3 + ptsBytes.count + payload.count
        // A length over 16 bits is written as 0 ("unbounded"), which the standard allows for audio too in practice.
        let lengthField = length <= 0xFFFF ? length : 0
        let pes = [0, 0, 1, streamID, UInt8(lengthField >> 8), UInt8(lengthField & 0xFF), 0x80, 0x80, 5] + ptsBytes + payload
        writePackets(pid: pid, pes, pcr: pcr ? pts : nil)
    }

    private mutating func writeSection(pid: Int, tableID: UInt8, tableIDExtension: Int, body: [UInt8]) {
        let length = 5 + body.count + 4
        var section: [UInt8] = [tableID, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF),
                                UInt8(tableIDExtension >> 8), UInt8(tableIDExtension & 0xFF), 0xC1, 0x00, 0x00] + body
        let crc = Self.crc32(section)
        section += [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        writePackets(pid: pid, [0x00] + section, pcr: nil)  // pointer field 0
    }

    private mutating func writePackets(pid: Int, _ data: [UInt8], pcr: UInt64?) {
        var offset = 0
        var first = true
        while offset < data.count || first {
            let counter = counters[pid, default: 0]
            counters[pid] = (counter + 1) & 0x0F
            var adaptation: [UInt8] = []
            if first, let pcr {
                // PCR base (33 bits) and extension 0: the audio stream's clock.
                adaptation = [0x10, UInt8(truncatingIfNeeded: pcr >> 25), UInt8(truncatingIfNeeded: pcr >> 17),
                              UInt8(truncatingIfNeeded: pcr >> 9), UInt8(truncatingIfNeeded: pcr >> 1),
                              UInt8(truncatingIfNeeded: (pcr & 1) << 7) | 0x7E, 0x00]
            }
            let room = 184 - (adaptation.isEmpty ? 0 : 1 + adaptation.count)
            let take = min(room, data.count - offset)
            if take < room {
                // Stuff the adaptation field so the packet is exactly 188 bytes.
                let stuffing = room - take
                if adaptation.isEmpty {
                    adaptation = stuffing == 1 ? [] : [0x00] + [UInt8](repeating: 0xFF, count: stuffing - 2)
                } else {
                    adaptation += [UInt8](repeating: 0xFF, count: stuffing)
                }
                let hasField = !adaptation.isEmpty || stuffing == 1
                bytes += [0x47, (first ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF), (hasField ? 0x30 : 0x10) | UInt8(counter)]
                if hasField { bytes += [UInt8(adaptation.count)] + adaptation }
            } else {
                let hasField = !adaptation.isEmpty
                bytes += [0x47, (first ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF), (hasField ? 0x30 : 0x10) | UInt8(counter)]
                if hasField { bytes += [UInt8(adaptation.count)] + adaptation }
            }
            bytes += data[offset..<offset + take]
            offset += take
            first = false
        }
    }

    /// CRC-32/MPEG-2 (polynomial 0x04C11DB7, no reflection, no final XOR), which PSI sections end with.
    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? crc << 1 ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }
}
