import Foundation
@testable import HLSWire
@testable import ICYWire
import SplitFixtures
import Testing

/// The fMP4 readers on ffmpeg's `-hls_segment_type fmp4` output.
@Suite struct FMP4ReaderTests {
    struct Run: Equatable {
        var samples: [FMP4Sample] = []
        var messages: [FMP4EventMessage] = []
        var fragmentStarts: [UInt64] = []
    }

    private func read(_ chunks: [[UInt8]], initSegment: FMP4InitSegment, limits: FMP4Limits = FMP4Limits()) throws -> Run {
        var reader = FMP4SegmentReader(initSegment: initSegment, limits: limits)
        var run = Run()
        let collect: (FMP4Event) -> Void = { event in
            switch event {
            case .sample(let sample): run.samples.append(sample)
            case .eventMessage(let message): run.messages.append(message)
            case .fragmentStart(let time): run.fragmentStarts.append(time)
            }
        }
        for chunk in chunks { try reader.push(chunk, collect) }
        try reader.finish(collect)
        return run
    }

    @Test func initSegment() async throws {
        let initSegment = try await FMP4InitSegment.parse(FFmpegHLS.output().bytes("init.mp4"))
        #expect(initSegment.timescale == 44100)
        #expect(initSegment.trackID == 1)
        guard case .aac(let config) = initSegment.codec else {
            Issue.record("not AAC: \(initSegment.codec)")
            return
        }
        #expect(config.objectType == 2)
        #expect(config.sampleRate == 44100)
        #expect(config.channelConfiguration == 1)
    }

    @Test func mediaSegmentsGiveFFmpegsADTSFramesWithContiguousTimes() async throws {
        let output = try await FFmpegHLS.output()
        let initBytes = try output.bytes("init.mp4")
        let initSegment = try FMP4InitSegment.parse(initBytes)
        var nextTime: UInt64?
        for index in 0..<3 {
            let segment = try output.bytes("f\(index).m4s")
            let run = try read([segment], initSegment: initSegment)
            #expect(!run.samples.isEmpty)
            // What ffmpeg extracts from init + segment, byte for byte.
            let joined = output.folder.appendingPathComponent("joined\(index).mp4")
            try Data(initBytes + segment).write(to: joined)
            let adts = try FFmpegHLS.ffmpeg(["-i", joined.lastPathComponent, "-c:a", "copy", "-f", "adts", "-"], in: output.folder)
            #expect(run.samples.flatMap(\.bytes) == [UInt8](adts), "segment \(index)")
            #expect(run.samples.allSatisfy { ADTSHeader($0.bytes)?.frameLength == $0.bytes.count })
            // Each sample starts where the one before ended, across segments too.
            for sample in run.samples {
                if let nextTime { #expect(sample.decodeTime == nextTime) }
                nextTime = sample.decodeTime + UInt64(sample.duration)
            }
            #expect(run.fragmentStarts.first == run.samples.first?.decodeTime)
        }
        #expect(nextTime.map { abs(Double($0) / 44100 - 5) < 0.1 } == true)
    }

    @Test func splitInvariantWithEventMessages() async throws {
        let output = try await FFmpegHLS.output()
        let initSegment = try FMP4InitSegment.parse(output.bytes("init.mp4"))
        let id3 = TimedID3Fixtures.titleTag(artist: "Artist", title: "Title")
        let segment = emsg(version: 1, time: 44100 * 2, id3: id3) + (try output.bytes("f1.m4s")) + emsg(version: 0, time: 4410, id3: id3)
        let reference = try read([segment], initSegment: initSegment)
        #expect(reference.messages.count == 2)
        #expect(reference.messages.allSatisfy { $0.carriesID3 && TimedID3(tag: $0.messageData)?.streamTitle == "Artist - Title" })
        #expect(reference.messages[0].time == .absolute(88200))
        #expect(reference.messages[0].seconds(segmentStart: 99) == 2)
        #expect(reference.messages[1].time == .afterSegmentStart(4410))
        #expect(reference.messages[1].seconds(segmentStart: 2) == 2.1)
        for (index, chunks) in Splits.all(segment, randomCount: 8).enumerated().dropFirst() {
            #expect(try read(chunks, initSegment: initSegment) == reference, "split #\(index)")
        }
    }

    @Test("Bytes that are not boxes with a moov (an error page, an empty answer, a media segment) are not an init segment; a moov without audio is")
    func notAnInitSegment() async throws {
        let page = Array("<!DOCTYPE html><html><body>502 Bad Gateway</body></html>".utf8)
        #expect(throws: FMP4Error.notAnInitSegment) { try FMP4InitSegment.parse(page) }
        #expect(throws: FMP4Error.notAnInitSegment) { try FMP4InitSegment.parse([]) }
        let media = try await FFmpegHLS.output().bytes("f1.m4s")
        #expect(throws: FMP4Error.notAnInitSegment) { try FMP4InitSegment.parse(media) }
        #expect(throws: FMP4Error.noAudioTrack) { try FMP4InitSegment.parse(box("moov", box("mvhd", [UInt8](repeating: 0, count: 100)))) }
    }

    @Test func hostileBoxes() async throws {
        let initSegment = try await FMP4InitSegment.parse(FFmpegHLS.output().bytes("init.mp4"))
        // A box smaller than its header.
        #expect(throws: FMP4Error.malformedBox(type: "moof")) { try read([[0, 0, 0, 4] + Array("moof".utf8)], initSegment: initSegment) }
        // An mdat over the bound is refused at its header, before its bytes arrive.
        let limits = FMP4Limits(maxMediaDataLength: 1000)
        #expect(throws: FMP4Error.boxTooLarge(type: "mdat", size: 2_000_000)) {
            try read([[0x00, 0x1E, 0x84, 0x80] + Array("mdat".utf8)], initSegment: initSegment, limits: limits)
        }
        // An unknown box streams past without being held, however large.
        let skipped = [0x40, 0, 0, 0] + Array("free".utf8) + [UInt8](repeating: 0, count: 100)
        var reader = FMP4SegmentReader(initSegment: initSegment)
        try reader.push(skipped) { _ in }
        // A box cut off at the end of the segment.
        #expect(throws: FMP4Error.self) { try read([[0, 0, 0, 100] + Array("moof".utf8) + [1, 2, 3]], initSegment: initSegment) }
        // Forty nested boxes: only the known path is descended, so nesting costs nothing.
        var nested: [UInt8] = []
        for _ in 0..<40 { nested = TimedID3Fixtures.bigEndian32(nested.count + 8) + Array("trak".utf8) + nested }
        let moov = TimedID3Fixtures.bigEndian32(nested.count + 8) + Array("moov".utf8) + nested
        #expect(throws: FMP4Error.noAudioTrack) { try FMP4InitSegment.parse(moov) }
        #expect(throws: FMP4Error.notAnInitSegment) { try FMP4InitSegment.parse([]) }
        // A trun declaring more samples than its box holds.
        let trun = box("trun", [0, 0, 0x02, 0x00] + TimedID3Fixtures.bigEndian32(0x7FFF_FFFF))
        let tfhd = box("tfhd", [0, 0x02, 0, 0] + TimedID3Fixtures.bigEndian32(initSegment.trackID))
        let moof = box("moof", box("traf", tfhd + trun))
        #expect(throws: FMP4Error.malformedTrackRun) { try read([moof], initSegment: initSegment) }
        // Two runs over the same 100 bytes of one mdat: refused, never the same audio twice (ten
        // such runs would make ten times the audio the segment holds).
        let base = box("tfhd", [0, 0x02, 0, 0] + TimedID3Fixtures.bigEndian32(initSegment.trackID))
        let overlapping = (0..<2).flatMap { _ in
            box("trun", [0, 0, 0x02, 0x01] + TimedID3Fixtures.bigEndian32(1) + TimedID3Fixtures.bigEndian32(88) + TimedID3Fixtures.bigEndian32(100))
        }
        let twice = box("moof", box("traf", base + overlapping))
        // The runs' data offset, 88, is this moof's 80 bytes plus the mdat's header: both runs start at its payload.
        #expect(twice.count == 80)
        #expect(throws: FMP4Error.malformedTrackRun) {
            try read([twice + box("mdat", [UInt8](repeating: 0x55, count: 100))], initSegment: initSegment)
        }
        // The same with one run reads the sample once.
        let run = box("trun", [0, 0, 0x02, 0x01] + TimedID3Fixtures.bigEndian32(1) + TimedID3Fixtures.bigEndian32(64) + TimedID3Fixtures.bigEndian32(100))
        let once = box("moof", box("traf", base + run))
        let single = try read([once + box("mdat", [UInt8](repeating: 0x55, count: 100))], initSegment: initSegment)
        #expect(single.samples.count == 1)
    }

    @Test func audioSpecificConfigs() {
        // HE-AAC (SBR, object type 5) at 22.05 kHz core: ADTS signals the LC core.
        let heAAC = AudioSpecificConfig([0x2B, 0x92, 0x08, 0x00])
        #expect(heAAC?.objectType == 2)
        #expect(heAAC?.sampleRate == 22050)
        #expect(heAAC?.channelConfiguration == 2)
        #expect(AudioSpecificConfig([0x12, 0x10])?.sampleRate == 44100)
        #expect(AudioSpecificConfig([0x12]) == nil)
        #expect(AudioSpecificConfig([0xF8, 0, 0, 0]) == nil)  // object type 31 escape to an unsupported type
    }

    private func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        TimedID3Fixtures.bigEndian32(payload.count + 8) + Array(type.utf8) + payload
    }

    private func emsg(version: UInt8, time: UInt64, id3: [UInt8]) -> [UInt8] {
        let scheme = Array("https://aomedia.org/emsg/ID3".utf8) + [0]
        let value = [UInt8(0)]
        var payload: [UInt8] = [version, 0, 0, 0]
        if version == 0 {
            payload += scheme + value + TimedID3Fixtures.bigEndian32(44100) + TimedID3Fixtures.bigEndian32(Int(time))
                + TimedID3Fixtures.bigEndian32(0) + TimedID3Fixtures.bigEndian32(1)
        } else {
            payload += TimedID3Fixtures.bigEndian32(44100) + TimedID3Fixtures.bigEndian32(Int(time >> 32))
                + TimedID3Fixtures.bigEndian32(Int(time & 0xFFFF_FFFF)) + TimedID3Fixtures.bigEndian32(0)
                + TimedID3Fixtures.bigEndian32(2) + scheme + value
        }
        return box("emsg", payload + id3)
    }
}
