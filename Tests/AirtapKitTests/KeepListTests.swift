@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import Foundation
import ICYWire
import Locking
import Logging
import RecordingRules
import TestStation
import Testing

/// `--keep-only` and `--skip` in the per-track recorder, fed events directly (no network): what
/// is not kept leaves no file anywhere under the folder, and what a kill leaves of it is deleted
/// by the next start.
@Suite("Keep and skip lists in the recorder")
struct KeepListTests {
    typealias Gap = RecordingAcrossAGapTests

    /// Keeps the recorder's log lines.
    struct LineCollector: LogHandler {
        let lines: Locked<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            lines.withLock { $0.append("\(event.message)") }
        }
    }

    static func list(_ text: String, path: String = "/lists/test.txt") throws -> TitleList {
        TitleList(path: path, patterns: try TitlePatternList.parse(Array(text.utf8)))
    }

    static func recorder(in folder: URL, rule: KeepRule, lines: Locked<[String]>, finished: FinishedTracks) -> TrackRecorder {
        var options = RecordingOptions(outputDirectory: folder.path)
        options.trackFloor = .none
        options.keepRule = rule
        options.measuresLoudness = false
        let logger = Logger(label: "keep") { _ in LineCollector(lines: lines) }
        return TrackRecorder(station: Station(id: "keep", name: "Keep FM", urls: ["http://127.0.0.1:9/"]),
                             options: finished.collecting(options), logger: logger) { _ in }
    }

    /// A connection's first (partial) track named "Ads - Radio Jingle", a whole "Björk - Jóga",
    /// and the last track, cut short, "Radio Jingle 2".
    static func threeTracks() throws -> [StreamEvent] {
        [try Gap.head()] + Gap.packets(0..<30) + [Gap.title("Ads - Radio Jingle", atFrame: 30)] + Gap.packets(30..<60)
            + [Gap.title("Björk - Jóga", atFrame: 60)] + Gap.packets(60..<90)
            + [Gap.title("Radio Jingle 2", atFrame: 90)] + Gap.packets(90..<120) + [.ended(.endOfStream)]
    }

    static func record(_ events: [StreamEvent], rule: KeepRule) throws -> (files: [String], tracks: [RecordedTrack], lines: [String]) {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let lines = Locked<[String]>([])
        let finished = FinishedTracks()
        let recorder = Self.recorder(in: folder, rule: rule, lines: lines, finished: finished)
        for event in events { try recorder.receive(event) }
        #expect(recorder.failure == nil)
        return (filesBelow(folder), finished.all, lines.withLock { $0 })
    }

    @Test("--skip: matching tracks, the partial first and last included, leave no file; one line each says why")
    func skip() throws {
        let result = try Self.record(Self.threeTracks(), rule: KeepRule(skip: Self.list("# ads\njingle\n")))
        #expect(result.files == ["Keep FM/Björk - Jóga.mp3"])
        #expect(result.tracks.map { $0.info?.raw } == ["Björk - Jóga"])
        let notKept = result.lines.filter { $0.hasPrefix("not kept") }
        #expect(notKept.count == 2, "\(result.lines)")
        #expect(notKept.allSatisfy { $0.contains("matches \"jingle\" (line 2 of skip list /lists/test.txt)") }, "\(notKept)")
    }

    @Test("--keep-only: only matching tracks stay, incomplete ones included; the others leave no file")
    func keepOnly() throws {
        let result = try Self.record(Self.threeTracks(), rule: KeepRule(keepOnly: Self.list("*BJÖRK*\nRADIO JINGLE 2\n")))
        #expect(result.files == ["Keep FM/Björk - Jóga.mp3", "Keep FM/incomplete/Radio Jingle 2.mp3"])
        #expect(result.lines.filter { $0.hasPrefix("not kept") }.count == 1, "\(result.lines)")
        #expect(result.lines.contains { $0.hasPrefix("not kept: matches nothing in keep list /lists/test.txt") })
    }

    @Test("--keep-only with --skip: a track must match the first and not the second")
    func both() throws {
        let rule = KeepRule(keepOnly: try Self.list("jingle"), skip: try Self.list("2"))
        let result = try Self.record(Self.threeTracks(), rule: rule)
        #expect(result.files == ["Keep FM/incomplete/Ads - Radio Jingle.mp3"])
    }

    @Test("--keep-only and a station that sends no title: nothing is kept")
    func noTitle() throws {
        let events = [try Gap.head()] + Gap.packets(0..<40) + [.ended(.endOfStream)]
        let result = try Self.record(events, rule: KeepRule(keepOnly: Self.list("*")))
        #expect(result.files.isEmpty)
        #expect(result.lines.contains { $0.contains("no title") }, "\(result.lines)")
        // Without lists the same stream leaves its partial track.
        #expect(try Self.record(events, rule: KeepRule()).files.count == 1)
    }

    @Test("While it plays, a track not to be kept is NAME.part.discard; a title that keeps it names it .part again")
    func partNames() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let lines = Locked<[String]>([])
        let recorder = Self.recorder(in: folder, rule: KeepRule(keepOnly: try Self.list("björk")), lines: lines, finished: FinishedTracks())
        // No title yet: not kept as it stands.
        for event in [try Gap.head()] + Gap.packets(0..<30) { try recorder.receive(event) }
        #expect(filesBelow(folder).allSatisfy { $0.hasSuffix(".mp3.part.discard") } && filesBelow(folder).count == 1,
                "\(filesBelow(folder))")
        // The first title names the audio already received, and keeps it.
        for event in [Gap.title("Björk - Jóga", atFrame: 30)] + Gap.packets(30..<60) { try recorder.receive(event) }
        #expect(filesBelow(folder).allSatisfy { $0.hasSuffix(".mp3.part") } && filesBelow(folder).count == 1, "\(filesBelow(folder))")
        // The next track is not kept from its first frame.
        for event in [Gap.title("Ads - Jingle", atFrame: 60)] + Gap.packets(60..<90) { try recorder.receive(event) }
        #expect(filesBelow(folder).filter { $0.hasSuffix(".part.discard") }.count == 1, "\(filesBelow(folder))")

        // A kill now: the next start finishes nothing of the discarded track, and deletes it.
        let lock = try RecordingLock.acquire(folder: "Keep FM", below: folder.path, stationID: "next-run", wait: false)
        let finished = LeftoverParts.finish(stationFolder: "Keep FM", below: folder.path, holding: lock, logger: Logger(label: "test"))
        #expect(finished.isEmpty)
        // Only the kept (partial, first) track is left; the lock files are the recordings' own.
        #expect(filesBelow(folder).filter { !$0.hasPrefix("Keep FM/.airtap-") && $0 != ".airtap.lock" } == ["Keep FM/incomplete/Björk - Jóga.mp3"])
    }

    @Test("Leftovers of a killed run: a .part.discard is deleted, a .part beside it finished into incomplete/")
    func leftovers() throws {
        let out = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: out) }
        let folder = out.appendingPathComponent("Station")
        let lock = try RecordingLock.acquire(folder: "Station", below: out.path, stationID: "mine", wait: false)
        let frames = Data(LeftoverRecoveryTests.frames(20))
        try frames.write(to: folder.appendingPathComponent("Jingle.mp3.part.discard"))
        try frames.write(to: folder.appendingPathComponent("Song.mp3.part"))
        let finished = LeftoverParts.finish(stationFolder: "Station", below: out.path, holding: lock, logger: Logger(label: "test"))
        #expect(finished == [folder.appendingPathComponent("incomplete/Song.mp3").path])
        #expect(filesBelow(folder).filter { !$0.hasPrefix(".airtap-") } == ["incomplete/Song.mp3"])
    }

    @Test("A list file: missing, too large, not UTF-8 or a folder is one clear line and exit code 1")
    func listFileErrors() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("none.txt").path
        #expect(throws: AirtapError.usage("--skip: \(missing): no such file")) {
            try TitleList.load(missing, describe: "--skip", asUsage: true)
        }
        let latin1 = folder.appendingPathComponent("latin1.txt")
        try Data([0x42, 0x6A, 0xF6, 0x72, 0x6B, 0x0A]).write(to: latin1)
        #expect(throws: AirtapError.configuration("station 'x': skip: \(latin1.path): line 1 is not UTF-8 text")) {
            try TitleList.load(latin1.path, describe: "station 'x': skip", asUsage: false)
        }
        let large = folder.appendingPathComponent("large.txt")
        try Data(repeating: 0x61, count: TitleList.maxFileBytes + 1).write(to: large)
        #expect(throws: AirtapError.usage("--keep-only: \(large.path): larger than 1 MiB")) {
            try TitleList.load(large.path, describe: "--keep-only", asUsage: true)
        }
        do {
            _ = try TitleList.load(folder.path, describe: "--keep-only", asUsage: true)
            Issue.record("a folder is not a list")
        } catch {
            #expect(error.exitCode == 1)
            #expect("\(error)".hasPrefix("--keep-only: \(folder.path): cannot read it:"))
        }
    }

    @Test("airtap record --skip and stations.json keep_only: end to end; a missing list is exit 1 with one line")
    func commandLine() async throws {
        let server = try await TestStationServer.start(RecordTests.configuration(), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let skip = folder.appendingPathComponent("skip.txt")
        try Data("# not these\n*Roses*\nTÖNES\n".utf8).write(to: skip)
        let out = folder.appendingPathComponent("out")
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", out.path,
                                                 "--no-silence-search", "--no-replaygain", "--skip", skip.path])
        #expect(result.status == 0, "\(result.stderr)")
        let files = filesBelow(out).filter { !$0.contains("/.airtap-") }
        #expect(!files.isEmpty)
        #expect(!files.contains { $0.contains("Roses") || $0.contains("Tönes") || $0.contains(".part") }, "\(files)")
        #expect(files.contains { $0.hasSuffix("Airtap Test Tones - A440.mp3") }, "\(files)")
        // logfmt escapes the quotes of the message.
        #expect(result.stderr.contains(#"not kept: matches \"*Roses*\""#), "\(result.stderr)")

        // A station's list that is not there: one line, exit 1, nothing recorded.
        let stations = folder.appendingPathComponent("stations.json")
        try Data(#"{"stations": [{"id": "tones", "url": "\#(server.streamURL)", "keep_only": "keep.txt"}]}"#.utf8).write(to: stations)
        let missing = try await AirtapBinary.run(["record", "tones", "--stations", stations.path, "--retries", "0",
                                                  "--out", folder.appendingPathComponent("out2").path])
        #expect(missing.status == 1, "\(missing.stderr)")
        #expect(missing.stderr.contains("station 'tones': keep_only: \(folder.path)/keep.txt: no such file"), "\(missing.stderr)")
        // The command line's own list, missing: a usage error.
        let usage = try await AirtapBinary.run(["record", server.streamURL, "--skip", folder.appendingPathComponent("none").path,
                                                "--out", folder.appendingPathComponent("out3").path])
        #expect(usage.status == 1)
        #expect(usage.stderr.contains("--skip: \(folder.path)/none: no such file"), "\(usage.stderr)")
    }

    // The limit only bounds a hang (the suite's children queue for a slot on a loaded machine);
    // the run's own duration is what is asserted.
    @Test("A skip list of 255 patterns of 4 KB against titles of 4 KB every 2 s: the recording still ends at its --for",
          .waitingForChildren)
    func hugeListHonoursTheLimit() async throws {
        let filler = String(repeating: "a", count: 3990)
        let titles = ["One - \(filler)", "Two - \(filler)", "Three - \(filler)"]
        let configuration = StationConfiguration(metaint: 8000, trackSeconds: 2, pace: .realtime, titles: titles)
        let server = try await TestStationServer.start(configuration, program: try await StationProgram.encoding(configuration))
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Each line costs a matcher that backtracks to its star the title's length times its own.
        let skip = folder.appendingPathComponent("skip.txt")
        let hostile = "*" + String(repeating: "a", count: 2000) + "b*"
        try Data((Array(repeating: hostile, count: 254) + ["Two - *"]).joined(separator: "\n").utf8).write(to: skip)
        let out = folder.appendingPathComponent("out")
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", out.path, "--for", "5",
                                                 "--no-silence-search", "--no-replaygain", "--skip", skip.path])
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        // Five seconds of recording; a 3x slower machine takes 15. Before, each title cost
        // seconds of CPU per decision, and the run ended long after its limit or not at all.
        #expect(result.duration < .seconds(45), "\(result.duration)")
        #expect(result.stderr.contains("not kept: matches"), "\(result.stderr.suffix(2000))")
        #expect(!filesBelow(out).contains { $0.contains("Two - ") }, "\(filesBelow(out))")
    }

    @Test("stations.json: keep_only and skip, relative to the file's folder; the command line's lists override each")
    func stationsFile() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("björk\n".utf8).write(to: folder.appendingPathComponent("keep.txt"))
        try Data("live\n".utf8).write(to: folder.appendingPathComponent("skip.txt"))
        let json = """
            {"stations": [{"id": "a", "url": "http://127.0.0.1:9/", "keep_only": "keep.txt", "skip": "\(folder.path)/skip.txt"}]}
            """
        let source = folder.appendingPathComponent("stations.json").path
        let catalog = try StationCatalog.parse(Data(json.utf8), source: source)
        #expect(catalog.warnings.isEmpty)
        let station = try #require(catalog.stations.first)
        let rule = try station.keepRule(overriding: KeepRule())
        #expect(rule.keepOnly?.path == folder.path + "/keep.txt")
        #expect(rule.decide(title: "Björk - Jóga") == .keep)
        #expect(!rule.decide(title: "Björk - Jóga (live)").isKept)
        #expect(!rule.decide(title: "Sigur Rós - Hoppípolla").isKept)
        let commandLine = KeepRule(keepOnly: try Self.list("sigur"))
        let overridden = try station.keepRule(overriding: commandLine)
        #expect(overridden.decide(title: "Sigur Rós - Hoppípolla") == .keep)
        #expect(!overridden.decide(title: "Sigur Rós - Hoppípolla (live)").isKept)
        // An empty path is refused when the file loads, with its place.
        let empty = #"{"stations": [{"id": "b", "url": "http://127.0.0.1:9/", "skip": ""}]}"#
        #expect(throws: AirtapError.self) { try StationCatalog.parse(Data(empty.utf8), source: source) }
        // A missing list is the station's configuration error.
        var broken = station
        broken.skip = "gone.txt"
        #expect(throws: AirtapError.configuration("station 'a': skip: \(folder.path)/gone.txt: no such file")) {
            try broken.keepRule(overriding: KeepRule())
        }
    }
}
