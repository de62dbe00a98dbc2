@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapStations
import AirtapTestSupport
import Foundation
@testable import ICYWire
@testable import Locking
import Logging
@testable import TestStation
import Testing

/// The track floor against a title flood, with no network: ICY titles every five frames (0.13 s)
/// into the per-track recorder and into a `--single` cue sheet.
@Suite("Track floor: titles faster than a second of audio")
struct TrackFloorTests {
    typealias Gap = RecordingAcrossAGapTests

    /// Keeps the warnings a recorder logs.
    struct WarningCollector: LogHandler {
        let warnings: Locked<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            if event.level == .warning { warnings.withLock { $0.append("\(event.message)") } }
        }
    }

    static let frames = 300
    static let framesPerTitle = 5

    /// A connection's head, then a new title every `framesPerTitle` frames, then the end.
    static func flood() throws -> [StreamEvent] {
        var events = [try Gap.head()]
        for start in stride(from: 0, to: frames, by: framesPerTitle) {
            events.append(Gap.title("Flood - \(start)", atFrame: start))
            events += Gap.packets(start..<(start + framesPerTitle))
        }
        return events + [.ended(.endOfStream)]
    }

    @Test("Per-track recorder: at most a file per second of audio, every frame kept, one warning")
    func recorderFlood() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let warnings = Locked<[String]>([])
        let logger = Logger(label: "floor") { _ in WarningCollector(warnings: warnings) }
        let finished = FinishedTracks()
        let recorder = TrackRecorder(station: Station(id: "flood", name: "Flood FM", urls: ["http://127.0.0.1:9/"]),
                                     options: finished.collecting(RecordingOptions(outputDirectory: folder.path)), logger: logger) { _ in }
        for event in try Self.flood() { try recorder.receive(event) }
        #expect(recorder.failure == nil)
        let tracks = finished.all
        let seconds = Double(Self.frames) * 1152 / 44100
        // The connection's first track (one title's worth), then files of at least a second.
        #expect(tracks.count <= 2 + Int(seconds), "\(tracks.count) files for \(Self.frames / Self.framesPerTitle) titles")
        #expect(tracks.dropFirst().dropLast().allSatisfy { $0.seconds >= 1 }, "\(tracks.map(\.seconds))")
        #expect(tracks.reduce(0) { $0 + $1.frameCount } == Self.frames, "every frame in a file")
        #expect(warnings.withLock { $0 }.count == 1, "\(warnings.withLock { $0 })")
        // A file is named by the last title that came before its cut.
        #expect(tracks.dropFirst().allSatisfy { $0.info?.artist == "Flood" })
    }

    @Test("Cue sheet: at most an entry per second of audio, the later title naming each, one warning")
    func cueSheetFlood() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let warnings = Locked<[String]>([])
        let logger = Logger(label: "floor") { _ in WarningCollector(warnings: warnings) }
        let path = folder.appendingPathComponent("show.mp3").path
        let recorder = SingleFileRecorder(path: path, station: Station(id: "flood", name: "Flood FM", urls: []), logger: logger) { _ in }
        for event in try Self.flood() { try recorder.receive(event) }
        #expect(recorder.failure == nil)
        let cue = try String(contentsOfFile: path + ".cue", encoding: .utf8)
        let entries = cue.split(separator: "\n").filter { $0.contains("TRACK ") }.count
        let seconds = Double(Self.frames) * 1152 / 44100
        #expect(entries >= 2 && entries <= 2 + Int(seconds), "\(entries) entries:\n\(cue)")
        #expect(cue.contains("TITLE \"\(Self.frames - Self.framesPerTitle)\""), "the last title names the last entry:\n\(cue)")
        #expect(warnings.withLock { $0 }.count == 1, "\(warnings.withLock { $0 })")
    }

    @Test("The floor trusts a track's claimed seconds only as far as its bytes carry them at 1000 B/s")
    func trustedSeconds() {
        #expect(TrackFloor.trustedSeconds(claimed: 2, bytes: 200) == 0.2, "a 200-byte link claiming 2 s counts 0.2 s")
        #expect(TrackFloor.trustedSeconds(claimed: 0.5, bytes: 8) == 0.008, "an 8-byte ADTS frame claiming 0.5 s")
        #expect(TrackFloor.trustedSeconds(claimed: 1.5, bytes: 24_000) == 1.5, "128 kbit/s MP3: its samples")
        #expect(TrackFloor.trustedSeconds(claimed: 1, bytes: 750) == 0.75, "6 kbit/s Opus: three quarters")
        #expect(TrackFloor.trustedSeconds(claimed: 3, bytes: -1) == 0)
        #expect(!TrackFloor.standard.allowsCut(after: 10, bytes: 999))
        #expect(TrackFloor.standard.allowsCut(after: 1, bytes: 1000))
        #expect(!TrackFloor.standard.allowsCut(after: 0.99, bytes: 1_000_000))
        #expect(TrackFloor.none.allowsCut(after: 0, bytes: 0))
    }

    /// A per-track recorder with the standard floor, fed `events` into `folder`: every file it
    /// wrote and its warnings.
    static func record(_ events: [StreamEvent], in folder: URL, writesTags: Bool = true) throws -> (tracks: [RecordedTrack], warnings: [String]) {
        let warnings = Locked<[String]>([])
        let finished = FinishedTracks()
        let logger = Logger(label: "floor") { _ in WarningCollector(warnings: warnings) }
        var options = RecordingOptions(outputDirectory: folder.path)
        options.writesTags = writesTags
        let recorder = TrackRecorder(station: Station(id: "liar", name: "Liar FM", urls: ["http://127.0.0.1:9/"]),
                                     options: finished.collecting(options), logger: logger) { _ in }
        for event in events { try recorder.receive(event) }
        #expect(recorder.failure == nil)
        #expect(!filesBelow(folder).contains { $0.hasSuffix(".part") }, "no part file left")
        return (finished.all, warnings.withLock { $0 })
    }

    /// ADTS frames of 8 bytes that each claim four raw data blocks at 8 kHz (0.512 s).
    static func tinyADTSFrame() -> [UInt8] {
        [0xFF, 0xF1, 0x6C, 0x40, 0x01, 0x1F, 0xFF, 0x00]
    }

    @Test("ADTS: 8-byte frames claiming half a second each, a title after every frame: a file per 1000 bytes at most, every frame kept")
    func tinyADTSFrames() throws {
        let frame = Self.tinyADTSFrame()
        let header = try #require(ADTSHeader(frame))
        #expect(header.samplesPerFrame == 4096 && header.sampleRate == 8000 && header.frameLength == 8)
        let frames = 2000
        var events = [try Gap.head()]
        for index in 0..<frames {
            let position = index * frame.count
            events.append(.metadata(TrackChange(info: TrackInfo(streamTitle: "Liar - \(index)"), position: position, source: .icy)))
            events.append(.packet(Packet(bytes: frame[...], position: position, header: .adts(header))))
        }
        events.append(.ended(.endOfStream))
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (tracks, _) = try Self.record(events, in: folder)
        let bytes = frames * frame.count
        #expect(tracks.count <= bytes / TrackFloor.minimumBytesPerSecond + 2, "\(tracks.count) files for \(bytes) bytes")
        #expect(tracks.reduce(0) { $0 + $1.frameCount } == frames, "every frame in a file")
        #expect(tracks.reduce(0) { $0 + $1.audioByteCount } == bytes)
    }

    @Test("Cue sheet: 8-byte ADTS frames claiming half a second each, a title after every frame: an entry per 1000 bytes at most")
    func tinyADTSFramesCueSheet() throws {
        let frame = Self.tinyADTSFrame()
        let header = try #require(ADTSHeader(frame))
        let frames = 2000
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("show.aac").path
        let recorder = SingleFileRecorder(path: path, station: Station(id: "liar", name: "Liar FM", urls: []),
                                          logger: Logger(label: "test")) { _ in }
        try recorder.receive(try Gap.head())
        try recorder.receive(.format(.adts(header)))
        for index in 0..<frames {
            let position = index * frame.count
            try recorder.receive(.metadata(TrackChange(info: TrackInfo(streamTitle: "Liar - \(index)"), position: position, source: .icy)))
            try recorder.receive(.packet(Packet(bytes: frame[...], position: position, header: .adts(header))))
        }
        try recorder.receive(.ended(.endOfStream))
        #expect(recorder.failure == nil)
        let bytes = frames * frame.count
        let cue = try String(contentsOfFile: path + ".cue", encoding: .utf8)
        let entries = cue.split(separator: "\n").filter { $0.contains("TRACK ") }.count
        #expect(entries >= 2 && entries <= bytes / TrackFloor.minimumBytesPerSecond + 2, "\(entries) entries for \(bytes) bytes")
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(size == bytes, "every frame in the file")
    }

    /// An MPEG-1 Layer III frame at 128 kbit/s: 417 bytes at 44.1 kHz, 384 at 48 kHz.
    static func mp3Frame(rate: Int) throws -> (bytes: [UInt8], header: MP3FrameHeader) {
        let head: [UInt8] = [0xFF, 0xFB, rate == 48000 ? 0x94 : 0x90, 0x00]
        let header = try #require(MP3FrameHeader(head[0], head[1], head[2], head[3]))
        #expect(header.sampleRate == rate)
        return (head + [UInt8](repeating: 0, count: header.frameLength - 4), header)
    }

    @Test("MP3 flapping between 44.1 and 48 kHz at every frame, a title every two: a file per second of audio, each of one rate, every frame kept")
    func flappingSampleRate() throws {
        let frames = [try Self.mp3Frame(rate: 44100), try Self.mp3Frame(rate: 48000)]
        let count = 800
        var events = [try Gap.head()]
        var position = 0
        for index in 0..<count {
            let frame = frames[index % 2]
            // As the ingest pipeline says it: a format event at every change of rate.
            events.append(.format(.mpeg(frame.header)))
            if index % 2 == 0 {
                events.append(.metadata(TrackChange(info: TrackInfo(streamTitle: "Flap - \(index)"), position: position, source: .icy)))
            }
            events.append(.packet(Packet(bytes: frame.bytes[...], position: position, header: .mpeg(frame.header))))
            position += frame.bytes.count
        }
        events.append(.ended(.endOfStream))
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (tracks, warnings) = try Self.record(events, in: folder)
        let seconds = Double(count) * 1152 / 46050
        // Two formats, each a file per trusted second of its own audio, the connection's first besides.
        #expect(tracks.count <= 2 * Int(seconds / 2) + 4, "\(tracks.count) files for \(seconds) s of audio")
        #expect(tracks.count <= position / TrackFloor.minimumBytesPerSecond + 4)
        #expect(tracks.reduce(0) { $0 + $1.frameCount } == count, "every frame in a file")
        for track in tracks {
            let oneRate = track.audioByteCount == track.frameCount * 417 || track.audioByteCount == track.frameCount * 384
            #expect(oneRate, "\(track.path): \(track.frameCount) frames in \(track.audioByteCount) bytes mix rates")
        }
        #expect(warnings.filter { $0.contains("format changed") }.count == 1, "\(warnings)")
    }

    @Test("MP3 rotating through all nine MPEG rates at every frame (24 to 144 bytes a frame), a title every nine: a file per 1000 bytes at most")
    func rotatingThroughEveryRate() throws {
        // Layer III at the lowest bitrate: MPEG-1 (32 kbit/s), MPEG-2 and MPEG-2.5 (8 kbit/s), rates 0, 1, 2.
        let frames = try [0xFB, 0xF3, 0xE3].flatMap { (b1: UInt8) in
            try (0..<3).map { (rate: UInt8) -> (bytes: [UInt8], header: MP3FrameHeader) in
                let header = try #require(MP3FrameHeader(0xFF, b1, 0x10 | rate << 2, 0x00))
                return ([0xFF, b1, 0x10 | rate << 2, 0x00] + [UInt8](repeating: 0, count: header.frameLength - 4), header)
            }
        }
        #expect(Set(frames.map(\.header.sampleRate)).count == 9 && Set(frames.map(\.bytes.count)).count == 9)
        let count = 9 * 400
        var events = [try Gap.head()]
        var position = 0
        for index in 0..<count {
            let frame = frames[index % frames.count]
            events.append(.format(.mpeg(frame.header)))
            if index % frames.count == 0 {
                events.append(.metadata(TrackChange(info: TrackInfo(streamTitle: "Spin - \(index)"), position: position, source: .icy)))
            }
            events.append(.packet(Packet(bytes: frame.bytes[...], position: position, header: .mpeg(frame.header))))
            position += frame.bytes.count
        }
        events.append(.ended(.endOfStream))
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (tracks, _) = try Self.record(events, in: folder)
        #expect(tracks.count <= position / TrackFloor.minimumBytesPerSecond + 9, "\(tracks.count) files for \(position) bytes")
        #expect(tracks.reduce(0) { $0 + $1.frameCount } == count, "every frame in a file")
        let lengths = Set(frames.map(\.bytes.count))
        for track in tracks {
            #expect(lengths.contains { track.audioByteCount == track.frameCount * $0 }, "\(track.path) mixes rates")
        }
    }

    @Test("An honest station: one change of sample rate mid-track ends that file, and the new rate's file is named by its first title; no warning")
    func honestRateChange() throws {
        let frames = [try Self.mp3Frame(rate: 44100), try Self.mp3Frame(rate: 48000)]
        var events = [try Gap.head()]
        var position = 0
        for index in 0..<400 {
            let frame = frames[index < 150 ? 0 : 1]
            if index == 0 || index == 150 { events.append(.format(.mpeg(frame.header))) }
            if index % 100 == 0 {
                events.append(.metadata(TrackChange(info: TrackInfo(streamTitle: "Honest - \(index)"), position: position, source: .icy)))
            }
            events.append(.packet(Packet(bytes: frame.bytes[...], position: position, header: .mpeg(frame.header))))
            position += frame.bytes.count
        }
        events.append(.ended(.endOfStream))
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (tracks, warnings) = try Self.record(events, in: folder)
        #expect(tracks.map(\.frameCount) == [100, 50, 150, 100], "\(tracks.map(\.path))")
        #expect(tracks.map { $0.audioByteCount / $0.frameCount } == [417, 417, 384, 384])
        #expect(tracks.map(\.info?.title) == ["0", "100", "200", "300"], "the new rate's first title names its file, as a connection's first")
        #expect(tracks.map(\.isComplete) == [false, false, false, false])
        #expect(warnings.isEmpty, "\(warnings)")
    }

    @Test("An honest Ogg station: Opus and Vorbis links of real size in turn are a file each, whole, of one codec")
    func honestCodecChanges() throws {
        let wire = (0..<6).flatMap {
            Self.lyingLink(serial: UInt32($0 + 1), codec: $0 % 2 == 0 ? .opus : .vorbis, title: "Turn \($0)", claimedSeconds: 2,
                           padding: 4000)
        }
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (tracks, warnings) = try Self.record(try Self.ingest(wire), in: folder, writesTags: false)
        #expect(tracks.map(\.info?.title) == (0..<6).map { "Turn \($0)" })
        #expect(tracks.map(\.isComplete) == [false, true, true, true, true, true], "\(tracks.map(\.path))")
        #expect(tracks.map { $0.path.hasSuffix(".opus") } == [true, false, true, false, true, false])
        #expect(tracks.reduce(0) { $0 + $1.audioByteCount } == wire.count)
        #expect(warnings.isEmpty, "\(warnings)")
    }

    /// One Opus or Vorbis link of `title` whose only audio page claims `claimedSeconds` in a few
    /// bytes (and `padding` more: a link whose bytes carry its claim).
    static func lyingLink(serial: UInt32, codec: OggCodec, title: String, claimedSeconds: Int, padding: Int = 0) -> [UInt8] {
        let rate = 48000
        var identification: [UInt8]
        if codec == .opus {
            identification = Array("OpusHead".utf8) + [1, 2, 0, 0, 0x80, 0xBB, 0, 0, 0, 0, 0]
        } else {
            identification = [0x01] + Array("vorbis".utf8) + [0, 0, 0, 0, 2, 0x80, 0xBB, 0, 0]
                + [0, 0, 0, 0, 0x00, 0xF4, 0x01, 0, 0, 0, 0, 0, 0xB8, 0x01]
        }
        let comments = VorbisComments(vendor: "liar", fields: [.init(key: "TITLE", value: title), .init(key: "ARTIST", value: "Liar")])
        var headers = [comments.packet(for: codec)]
        if codec == .vorbis { headers.append([0x05] + Array("vorbis".utf8) + [0x42]) }
        var pages = OggPaginator.pages(for: [identification], serialNumber: serial, firstSequenceNumber: 0,
                                       firstFlags: .beginningOfStream, granulePosition: 0)
        pages += OggPaginator.pages(for: headers, serialNumber: serial, firstSequenceNumber: UInt32(pages.count), firstFlags: [],
                                    granulePosition: 0)
        pages += OggPaginator.pages(for: [[0xFC, 0xFF, 0xFE] + [UInt8](repeating: 0, count: padding)], serialNumber: serial, firstSequenceNumber: UInt32(pages.count),
                                    firstFlags: .endOfStream, granulePosition: Int64(claimedSeconds * rate))
        return Array(pages.joined())
    }

    /// Ogg bytes through the ingest pipeline into the recorder.
    static func ingest(_ wire: [UInt8]) throws -> [StreamEvent] {
        let pipeline = IngestPipeline(metaint: nil, charset: .cp1252, logger: Logger(label: "test"), container: .ogg)
        var events = [try Gap.head()]
        wire.withUnsafeBytes { raw in pipeline.consume(raw) { events.append($0) } }
        pipeline.finish { events.append($0) }
        return events + [.ended(.endOfStream)]
    }

    @Test("Ogg: links of a hundred-odd bytes whose one page claims two seconds: a file per 1000 bytes at most, every page kept",
          arguments: [OggCodec.opus, .vorbis])
    func lyingGranules(codec: OggCodec) throws {
        let links = 400
        let wire = (0..<links).flatMap { Self.lyingLink(serial: UInt32($0 + 1), codec: codec, title: "Lie \($0)", claimedSeconds: 2) }
        let events = try Self.ingest(wire)
        #expect(events.filter { if case .packet = $0 { true } else { false } }.count == links * 3, "every link's pages reach the recorder")
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (tracks, _) = try Self.record(events, in: folder, writesTags: false)
        #expect(tracks.count <= wire.count / TrackFloor.minimumBytesPerSecond + 2, "\(tracks.count) files for \(wire.count) bytes")
        #expect(tracks.reduce(0) { $0 + $1.audioByteCount } == wire.count, "every page in a file")
    }

    @Test("Ogg: Opus and Vorbis links in turn, each claiming seconds in a few bytes: no file mixes codecs, a file per 1000 bytes at most")
    func alternatingCodecs() throws {
        let links = 400
        let wire = (0..<links).flatMap {
            Self.lyingLink(serial: UInt32($0 + 1), codec: $0 % 2 == 0 ? .opus : .vorbis, title: "Turn \($0)", claimedSeconds: 2)
        }
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (tracks, _) = try Self.record(try Self.ingest(wire), in: folder, writesTags: false)
        #expect(tracks.count <= wire.count / TrackFloor.minimumBytesPerSecond + 6, "\(tracks.count) files for \(wire.count) bytes")
        #expect(tracks.reduce(0) { $0 + $1.audioByteCount } == wire.count, "every page in a file")
        for track in tracks {
            let text = try String(decoding: Data(contentsOf: URL(fileURLWithPath: track.path)), as: UTF8.self)
            let codecs = [text.contains("OpusHead"), text.contains("vorbis")].filter { $0 }.count
            #expect(codecs == 1, "\(track.path) holds \(codecs) codecs")
            #expect(track.path.hasSuffix(text.contains("OpusHead") ? ".opus" : ".ogg"), "\(track.path)")
        }
    }
}
