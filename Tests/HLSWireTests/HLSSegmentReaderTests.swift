@testable import HLSWire
@testable import ICYWire
import SplitFixtures
import Testing

/// The segment reader on segments built byte by byte here: packed audio, MPEG-TS with a
/// timed-ID3 stream, fMP4 with `emsg` boxes.
@Suite struct HLSSegmentReaderTests {
    typealias F = TimedID3Fixtures

    /// The events of one segment pushed in `chunks`, adjacent `.audio` joined (how the bytes were
    /// cut may cut the audio differently, never anything else).
    static func read(_ chunks: [[UInt8]], format: HLSSegmentFormat?, finish: Bool = true) -> [HLSMediaEvent] {
        var reader = HLSSegmentReader(format: format)
        var events: [HLSMediaEvent] = []
        let collect: (HLSMediaEvent) -> Void = { event in
            if case .audio(let bytes) = event, case .audio(let previous)? = events.last {
                events[events.count - 1] = .audio((Array(previous) + bytes)[...])
            } else if case .audio(let bytes) = event {
                events.append(.audio(Array(bytes)[...]))
            } else {
                events.append(event)
            }
        }
        for chunk in chunks { reader.push(chunk[...], collect) }
        if finish { reader.finish(collect) }
        return events
    }

    static func title(_ tag: [UInt8]) -> HLSMediaEvent {
        .timedMetadata(TimedID3(tag: tag)!)
    }

    static func audio(_ bytes: [UInt8]) -> HLSMediaEvent {
        .audio(bytes[...])
    }

    static func isDropped(_ event: HLSMediaEvent?) -> Bool {
        if case .dropped? = event { true } else { false }
    }

    /// Whole, byte by byte, and cut at random by several seeds: the same events every time.
    static func expectSplitInvariant(_ segment: [UInt8], format: HLSSegmentFormat?, sourceLocation: SourceLocation = #_sourceLocation) {
        let reference = read([segment], format: format)
        #expect(read(segment.map { [$0] }, format: format) == reference, "byte by byte", sourceLocation: sourceLocation)
        for seed: UInt64 in [1, 0xA1_27A9, 0xDEAD_BEEF, 42] {
            for (index, chunks) in Splits.all(segment, randomCount: 8, seed: seed).enumerated().dropFirst(2) {
                #expect(read(chunks, format: format) == reference, "seed \(seed), split #\(index)", sourceLocation: sourceLocation)
            }
        }
    }

    // MARK: Packed audio

    static func adtsFrames(_ count: Int) -> [UInt8] {
        (0..<count).flatMap { Bytes.adtsFrame(length: 100 + $0 * 3, seed: $0) }
    }

    static func mp3Frames(_ count: Int) -> [UInt8] {
        (0..<count).flatMap { Bytes.mp3Frame(seed: $0) }
    }

    @Test("Packed audio: the tag's title comes first, its bytes never reach the audio, and the audio is exactly the frames",
          arguments: ["adts", "mp3"])
    func packedAudioTitleFirstAndAudioExact(codec: String) {
        let frames = codec == "adts" ? Self.adtsFrames(6) : Self.mp3Frames(4)
        let tag = F.titleTag(artist: "Artist", title: "Title", timestamp: 900_000)
        let segment = tag + frames
        for format: HLSSegmentFormat? in [.packedAudio, nil] {
            let events = Self.read([segment], format: format)
            #expect(events == [Self.title(tag), Self.audio(frames)])
            guard case .timedMetadata(let metadata)? = events.first else { continue }
            #expect(metadata.streamTitle == "Artist - Title")
            #expect(metadata.transportTimestamp == 900_000)
            Self.expectSplitInvariant(segment, format: format)
        }
    }

    @Test("A packed segment without a tag is all audio")
    func packedAudioWithoutTag() {
        let frames = Self.adtsFrames(5)
        for format: HLSSegmentFormat? in [.packedAudio, nil] {
            #expect(Self.read([frames], format: format) == [Self.audio(frames)])
            Self.expectSplitInvariant(frames, format: format)
        }
        // Shorter than an ID3 header: still audio, given out at the end.
        let short = Array(frames.prefix(7))
        #expect(Self.read([short], format: .packedAudio) == [Self.audio(short)])
        #expect(Self.read([short], format: .packedAudio, finish: false) == [])
    }

    @Test("A tag with a title but no audio after it gives the title and no audio")
    func packedAudioTagOnly() {
        let tag = F.titleTag(artist: "A", title: "T")
        #expect(Self.read([tag], format: .packedAudio) == [Self.title(tag)])
        // Cut off inside the tag: dropped, and its bytes are not taken for audio.
        let events = Self.read([Array(tag.dropLast(3))], format: .packedAudio)
        #expect(events.count == 1)
        #expect(Self.isDropped(events.first))
    }

    @Test("A tag larger than maxTagLength is dropped at its header, skipped unbuffered, and the audio after it is exact")
    func packedAudioOversizedTag() {
        let tagSize = TimedID3.maxTagLength
        let header = Array("ID3".utf8) + [4, 0, 0] + F.syncsafe(tagSize)
        let body = [UInt8](repeating: 0x55, count: tagSize)
        let frames = Self.adtsFrames(4)
        var reader = HLSSegmentReader(format: .packedAudio)
        var events: [HLSMediaEvent] = []
        // The header alone says the tag is too large: dropped at once, before its body arrives.
        reader.push(header[...]) { events.append($0) }
        #expect(events.count == 1)
        #expect(Self.isDropped(events.first))
        // The body goes past without an event; the audio then comes out exactly.
        for start in stride(from: 0, to: body.count, by: 4096) {
            reader.push(body[start..<min(body.count, start + 4096)]) { events.append($0) }
        }
        #expect(events.count == 1)
        reader.push(frames[...]) { events.append($0) }
        reader.finish { events.append($0) }
        #expect(events.dropFirst().flatMap { event -> [UInt8] in
            guard case .audio(let bytes) = event else { Issue.record("not audio: \(event)"); return [] }
            return Array(bytes)
        } == frames)

        // Any cut of the same segment, the tag's last bytes and the first frame in one chunk included.
        let segment = header + body + frames
        let whole = Self.read([segment], format: .packedAudio)
        #expect(whole.count == 2)
        #expect(Self.isDropped(whole.first))
        #expect(whole.last == Self.audio(frames))
        #expect(Self.read([Array(segment.prefix(tagSize)), Array(segment.dropFirst(tagSize))], format: nil)
            == Self.read([segment], format: .packedAudio))
        Self.expectSplitInvariant(segment, format: .packedAudio)
    }

    // MARK: MPEG-TS

    static let audioPID = 0x100
    static let id3PID = 0x101

    /// PAT, PMT (ADTS on 0x100, timed ID3 on 0x101), then the given PES packets in order.
    struct TransportStream {
        var bytes: [UInt8]
        private var counters: [Int: Int] = [:]

        init() {
            bytes = []
            append(pid: 0, Bytes.tsSection(tableID: 0, body: [0, 1, 0xE0, 0x20]))
            append(pid: 0x20, Bytes.tsSection(tableID: 2, body: [0xE1, 0x00, 0xF0, 0x00,
                                                                  0x0F, 0xE1, 0x00, 0xF0, 0x00,
                                                                  0x15, 0xE1, 0x01, 0xF0, 0x00]))
        }

        mutating func append(pid: Int, _ payload: [UInt8]) {
            var offset = 0
            while offset < payload.count {
                let end = min(payload.count, offset + 184)
                let counter = counters[pid, default: 0]
                bytes += Bytes.tsPacket(pid: pid, start: offset == 0, counter: counter, payload: Array(payload[offset..<end]))
                counters[pid] = counter + 1
                offset = end
            }
        }

        mutating func audio(pts: UInt64, _ frames: [UInt8]) {
            append(pid: HLSSegmentReaderTests.audioPID, Bytes.pes(streamID: 0xC0, pts: pts, payload: frames))
        }

        mutating func id3(pts: UInt64, _ tag: [UInt8]) {
            append(pid: HLSSegmentReaderTests.id3PID, Bytes.pes(streamID: 0xBD, pts: pts, payload: tag))
        }
    }

    @Test("MPEG-TS: a title comes out just before the first audio PES stamped at or after it; one left at the end comes out at finish")
    func transportStreamTitlesByPTS() {
        let pes: [[UInt8]] = (0..<4).map { (index: Int) -> [UInt8] in
            Bytes.adtsFrame(length: 90 + index * 10, seed: index * 2) + Bytes.adtsFrame(length: 91 + index * 10, seed: index * 2 + 1)
        }
        let between = F.titleTag(artist: "Between", title: "PES 1 and 2", timestamp: nil)
        let equal = F.titleTag(artist: "Equal", title: "PES 3")
        let late = F.titleTag(artist: "After", title: "the last audio")
        var ts = TransportStream()
        ts.audio(pts: 0, pes[0])
        // Both arrive long before their audio: they wait for it, not for nothing.
        ts.id3(pts: 13_500, between)
        ts.id3(pts: 27_000, equal)
        ts.audio(pts: 9_000, pes[1])
        ts.id3(pts: 900_000, late)
        ts.audio(pts: 18_000, pes[2])
        ts.audio(pts: 27_000, pes[3])

        let expected = [Self.audio(pes[0] + pes[1]), Self.title(between), Self.audio(pes[2]), Self.title(equal), Self.audio(pes[3]), Self.title(late)]
        for format: HLSSegmentFormat? in [.transportStream, nil] {
            #expect(Self.read([ts.bytes], format: format) == expected)
            // Before finish the late title is still waiting.
            #expect(Self.read([ts.bytes], format: format, finish: false) == Array(expected.dropLast()))
            Self.expectSplitInvariant(ts.bytes, format: format)
        }
    }

    @Test("MPEG-TS: a title without a PTS applies from the next audio PES")
    func transportStreamTitleWithoutPTS() {
        let frames = Self.adtsFrames(2)
        let tag = F.titleTag(artist: "No", title: "PTS")
        var ts = TransportStream()
        ts.audio(pts: 0, frames)
        ts.append(pid: Self.id3PID, [0, 0, 1, 0xBD, 0, UInt8(3 + tag.count), 0x80, 0x00, 0] + tag)
        ts.audio(pts: 90_000, frames)
        #expect(Self.read([ts.bytes], format: .transportStream) == [Self.audio(frames), Self.title(tag), Self.audio(frames)])
        Self.expectSplitInvariant(ts.bytes, format: .transportStream)
    }

    @Test("More than maxWaitingTitles titles waiting: the first maxWaitingTitles are kept, the rest dropped")
    func waitingTitlesAreBounded() {
        let count = HLSSegmentReader.maxWaitingTitles + 9
        let tags = (0..<count).map { F.titleTag(artist: "Flood", title: "\($0)") }
        let frames = Self.adtsFrames(1)
        var ts = TransportStream()
        for tag in tags { ts.id3(pts: 9_000_000, tag) }
        ts.audio(pts: 0, frames)
        let events = Self.read([ts.bytes], format: .transportStream)
        #expect(events == [Self.audio(frames)] + tags.prefix(HLSSegmentReader.maxWaitingTitles).map(Self.title))
        Self.expectSplitInvariant(ts.bytes, format: .transportStream)
    }

    // MARK: fMP4

    static let config = AudioSpecificConfig([0x12, 0x10])!
    static let initSegment = FMP4InitSegment(trackID: 1, timescale: 44100, codec: .aac(config),
                                             defaultSampleDuration: 1024, defaultSampleSize: 0)

    /// moof (tfhd default-base-is-moof, tfdt, trun with sizes) + mdat; returns the segment bytes and
    /// the ADTS frames its samples become.
    static func fragment(decodeTime: Int, samples: [[UInt8]]) -> (bytes: [UInt8], frames: [[UInt8]]) {
        func moof(dataOffset: Int) -> [UInt8] {
            Bytes.box("moof", Bytes.box("mfhd", [0, 0, 0, 0] + F.bigEndian32(1)) + Bytes.box("traf",
                Bytes.box("tfhd", [0, 0x02, 0, 0] + F.bigEndian32(1))
                + Bytes.box("tfdt", [0, 0, 0, 0] + F.bigEndian32(decodeTime))
                + Bytes.box("trun", [0, 0, 0x02, 0x01] + F.bigEndian32(samples.count) + F.bigEndian32(dataOffset)
                    + samples.flatMap { F.bigEndian32($0.count) })))
        }
        let moofLength = moof(dataOffset: 0).count
        let bytes = moof(dataOffset: moofLength + 8) + Bytes.box("mdat", samples.flatMap { $0 })
        return (bytes, samples.map { config.adtsHeader(payloadLength: $0.count) + $0 })
    }

    @Test("fMP4: an emsg title comes out just before the first sample decoded at or after its time, absolute or after the segment start")
    func fragmentedMP4TitlesByDecodeTime() {
        // Samples at 88200, 89224, 90248, 91272 (1024 ticks each, timescale 44100).
        let samples = (0..<4).map { Bytes.payload(20 + $0 * 5, seed: $0) }
        let (fragment, frames) = Self.fragment(decodeTime: 88_200, samples: samples)
        let absolute = F.titleTag(artist: "Absolute", title: "between samples 1 and 2")
        let relative = F.titleTag(artist: "Relative", title: "3000 ticks after the segment start")
        let late = F.titleTag(artist: "After", title: "the last sample")
        // CMAF puts a segment's emsg boxes before its first moof: a version-0 delta counts from
        // a start the reader has not seen yet.
        let segment = Bytes.box("styp", Array("msdh".utf8)) + Bytes.emsg(version: 1, time: 89_500, id3: absolute)
            + Bytes.emsg(version: 0, time: 3_000, id3: relative) + Bytes.emsg(version: 1, time: 441_000, id3: late) + fragment
        let format = HLSSegmentFormat.fragmentedMP4(Self.initSegment)
        let expected = [Self.audio(frames[0] + frames[1]), Self.title(absolute), Self.audio(frames[2]), Self.title(relative),
                        Self.audio(frames[3]), Self.title(late)]
        #expect(Self.read([segment], format: format) == expected)
        #expect(Self.read([segment], format: format, finish: false) == Array(expected.dropLast()))
        Self.expectSplitInvariant(segment, format: format)
    }

    @Test("fMP4: a version-0 emsg between fragments counts from the segment's first fragment, not the one before it")
    func fragmentedMP4DeltaCountsFromTheSegmentStart() {
        // Three fragments of two samples: 0, 1024 | 2048, 3072 | 4096, 5120.
        let fragments = (0..<3).map { index in
            Self.fragment(decodeTime: 2048 * index, samples: [Bytes.payload(20 + index, seed: index), Bytes.payload(30 + index, seed: index + 5)])
        }
        let tag = F.titleTag(artist: "Delta", title: "3000 ticks after the segment start")
        // Read after the second fragment: due at 3000 (already past), so with the next sample,
        // 4096; from the second fragment's start it would wait for 5048.
        let segment = fragments[0].bytes + fragments[1].bytes + Bytes.emsg(version: 0, time: 3_000, id3: tag) + fragments[2].bytes
        let format = HLSSegmentFormat.fragmentedMP4(Self.initSegment)
        let before = fragments[0].frames + fragments[1].frames
        let expected = [Self.audio(before.flatMap { $0 }), Self.title(tag), Self.audio(fragments[2].frames.flatMap { $0 })]
        #expect(Self.read([segment], format: format) == expected)
        Self.expectSplitInvariant(segment, format: format)
    }

    @Test("fMP4: a segment that cannot be read is dropped from there on, and its waiting titles still come out")
    func fragmentedMP4Failure() {
        let samples = [Bytes.payload(30, seed: 1)]
        let (fragment, frames) = Self.fragment(decodeTime: 0, samples: samples)
        let late = F.titleTag(artist: "Still", title: "announced")
        let segment = Bytes.emsg(version: 1, time: 441_000, id3: late) + fragment + [0, 0, 0, 4] + Array("moof".utf8) + fragment
        let format = HLSSegmentFormat.fragmentedMP4(Self.initSegment)
        let events = Self.read([segment], format: format)
        #expect(events.count == 3)
        #expect(events.first == Self.audio(frames[0]))
        #expect(Self.isDropped(events.dropFirst().first))
        #expect(events.last == Self.title(late))
        Self.expectSplitInvariant(segment, format: format)
    }
}

/// Byte builders for the segments above (the same layouts as tools/fuzz/seeds.swift).
private enum Bytes {
    static func payload(_ count: Int, seed: Int) -> [UInt8] {
        (0..<count).map { UInt8(($0 &* 7 &+ seed &* 13) % 255) }
    }

    /// AAC LC 44.1 kHz stereo, no CRC.
    static func adtsFrame(length: Int, seed: Int) -> [UInt8] {
        [0xFF, 0xF1, 0x50, 0x80 | UInt8(length >> 11), UInt8((length >> 3) & 0xFF), UInt8((length & 7) << 5) | 0x1F, 0xFC]
            + payload(length - 7, seed: seed)
    }

    /// MPEG-1 Layer III 128 kbps 44.1 kHz, unpadded: 417 bytes.
    static func mp3Frame(seed: Int) -> [UInt8] {
        [0xFF, 0xFB, 0x90, 0x40] + payload(413, seed: seed)
    }

    static func tsPacket(pid: Int, start: Bool, counter: Int, payload: [UInt8]) -> [UInt8] {
        let header: [UInt8] = [0x47, UInt8(start ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF)]
        let room = 184 - payload.count
        if room == 0 { return header + [0x10 | UInt8(counter & 0x0F)] + payload }
        let adaptation: [UInt8] = room == 1 ? [0] : [UInt8(room - 1), 0] + [UInt8](repeating: 0xFF, count: room - 2)
        return header + [0x30 | UInt8(counter & 0x0F)] + adaptation + payload
    }

    static func tsSection(tableID: UInt8, body: [UInt8]) -> [UInt8] {
        let length = body.count + 5 + 4
        return [0, tableID, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF), 0, 1, 0xC1, 0, 0] + body + [0, 0, 0, 0]
    }

    static func pes(streamID: UInt8, pts: UInt64, payload: [UInt8]) -> [UInt8] {
        let ptsBytes: [UInt8] = [0x21 | UInt8((pts >> 29) & 0x0E), UInt8((pts >> 22) & 0xFF), UInt8((pts >> 14) & 0xFE) | 1,
                                 UInt8((pts >> 7) & 0xFF), UInt8((pts << 1) & 0xFE) | 1]
        let length = 3 + ptsBytes.count + payload.count
        return [0, 0, 1, streamID, UInt8(length >> 8), UInt8(length & 0xFF), 0x80, 0x80, 5] + ptsBytes + payload
    }

    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        TimedID3Fixtures.bigEndian32(payload.count + 8) + Array(type.utf8) + payload
    }

    /// An AOM ID3 `emsg` on timescale 44100: version 1 at an absolute time, version 0 a delta
    /// after the segment's start.
    static func emsg(version: UInt8, time: Int, id3: [UInt8]) -> [UInt8] {
        let scheme = Array("https://aomedia.org/emsg/ID3".utf8) + [0]
        let value: [UInt8] = [0]
        let b32 = TimedID3Fixtures.bigEndian32
        let fields = version == 0
            ? scheme + value + b32(44100) + b32(time) + b32(0) + b32(1)
            : b32(44100) + b32(0) + b32(time) + b32(0) + b32(2) + scheme + value
        return box("emsg", [version, 0, 0, 0] + fields + id3)
    }
}
