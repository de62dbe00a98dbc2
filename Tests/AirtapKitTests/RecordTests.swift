import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import ID3Tagging
import Logging
import RecordingRules
@testable import TestStation
import Testing

/// A recorded file taken apart: its ID3v2 tag, its Xing frame, its audio frames.
struct RecordedFileContents {
    let tag: ID3TextFrames?
    let xingCounts: (frames: Int, bytes: Int)?
    let frames: [[UInt8]]
    var audio: [UInt8] { frames.flatMap { $0 } }

    init(path: String) throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        var offset = 0
        if let header = ID3v2Header(bytes) {
            tag = ID3Reader.textFrames(in: Array(bytes[0..<header.totalLength]))
            offset = header.totalLength
        } else {
            tag = nil
        }
        var framer = AudioFramer()
        var frames: [[UInt8]] = []
        for event in framer.push(Array(bytes[offset...])) + framer.finish() {
            if case .packet(let packet) = event { frames.append(Array(packet.bytes)) }
        }
        // The first frame is the Xing/Info frame when it says so after the side information.
        if let first = frames.first, let marker = Self.xingMarkerOffset(first) {
            func word(_ at: Int) -> Int { first[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
            xingCounts = (word(marker + 8), word(marker + 12))
            frames.removeFirst()
        } else {
            xingCounts = nil
        }
        self.frames = frames
    }

    private static func xingMarkerOffset(_ frame: [UInt8]) -> Int? {
        for offset in [13, 21, 36] where frame.count >= offset + 16 {
            let marker = String(decoding: frame[offset..<offset + 4], as: UTF8.self)
            if marker == "Xing" || marker == "Info" { return offset }
        }
        return nil
    }
}

/// Walks a folder and returns every file below it, relative paths sorted.
func filesBelow(_ folder: URL) -> [String] {
    let enumerator = FileManager.default.enumerator(atPath: folder.path)
    var files: [String] = []
    while let path = enumerator?.nextObject() as? String {
        var isFolder: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).path, isDirectory: &isFolder)
        if !isFolder.boolValue { files.append(path) }
    }
    return files.sorted()
}

@Suite("Recording")
struct RecordTests {
    static let titles = [
        "Airtap Test Tones - A440",
        "Ünïcödé Tönes – Sœur's Song; Part=2",
        "../../x",
        "/etc/passwd",
        "Guns N' Roses - Sweet Child o' Mine",
    ]

    static let program: StationProgram = {
        do {
            return try StationProgram(configuration: StationConfiguration(trackSeconds: 2, titles: titles))
        } catch {
            fatalError("cannot encode: \(error)")
        }
    }()

    static func configuration(maxSeconds: Double? = 13, pace: StationConfiguration.Pace = .fast) -> StationConfiguration {
        StationConfiguration(metaint: 4000, trackSeconds: 2, pace: pace, titles: titles, maxSeconds: maxSeconds)
    }

    /// Records a whole finite stream in process and returns the recorder and the output folder.
    static func record(_ server: TestStationServer, options: (String) -> RecordingOptions) async throws -> (TrackRecorder, URL, FinishedTracks) {
        let folder = try AirtapBinary.temporaryFolder()
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let station = Station(id: "tones", name: "Tones FM", urls: [server.streamURL])
        let finished = FinishedTracks()
        let recorder = TrackRecorder(station: station, options: finished.collecting(options(folder.path)), logger: Logger(label: "test")) { _ in }
        let writer = QueuedSink(recorder, label: "test")
        // The stall timeout is not under test here: on a loaded machine the recorder (decoding every
        // packet for its loudness) can hold the transfer paused long enough for the default 15 s.
        let session = StationSession(station: station, loop: loop, options: IngestOptions(stallTimeout: 60), sinks: [writer],
                                     logger: Logger(label: "test"))
        session.start()
        let stop = await session.stopped()
        await reportStall(stop, url: server.streamURL)
        #expect(stop == .endOfStream)
        writer.drain()
        return (recorder, folder, finished)
    }

    @Test("One tagged file per title, frame-exact, partial tracks in incomplete/, nothing outside the folder")
    func perTrack() async throws {
        let server = try await TestStationServer.start(Self.configuration(), program: Self.program)
        defer { Task { try? await server.stop() } }
        let (_, folder, finished) = try await Self.record(server) { RecordingOptions(outputDirectory: $0) }
        let tracks = finished.all
        let sentCount = Self.program.audioByteCount(from: 0, seconds: 13)
        let sent = Self.program.audio(from: 0, count: sentCount)
        let announced = StationTransmission.render(program: Self.program, metaint: 4000, audioCount: sentCount,
                                                   streamURL: server.streamURL).titles

        // Every frame the station sent is in exactly one file, in order.
        let contents = try tracks.map { try RecordedFileContents(path: $0.path) }
        #expect(contents.flatMap(\.audio) == sent)
        // A file per announced title; the first and the cut-short last are incomplete.
        #expect(tracks.count == announced.count)
        #expect(tracks.map(\.isComplete) == [false] + Array(repeating: true, count: tracks.count - 2) + [false])
        #expect(tracks.map { $0.info?.raw } == announced.map(\.title))
        // Cuts fall at the frame boundary at or after the position each title arrived at.
        var offset = contents[0].audio.count
        for (index, file) in contents.enumerated().dropFirst() {
            let position = announced[index].audioOffset
            #expect(offset >= position && offset < position + 1000, "cut \(index) at \(offset), title at \(position)")
            offset += file.audio.count
        }
        // Xing counts are the file's frames; tags carry the titles, non-ASCII and punctuation intact.
        for (track, file) in zip(tracks, contents) {
            #expect(file.xingCounts?.frames == file.frames.count)
            #expect(file.xingCounts?.bytes == file.audio.count + Self.xingLength(track.path))
            #expect(file.tag?.title == track.info?.title)
            #expect(file.tag?["TALB"] == "Tones FM")
            #expect(file.tag?["TSSE"]?.hasPrefix("airtap ") == true)
        }
        let second = try #require(contents.first { $0.tag?.artist == "Ünïcödé Tönes" })
        #expect(second.tag?.title == "Sœur's Song; Part=2")

        // Names: artist - title, a title alone without artist; hostile titles stay inside the folder.
        let files = filesBelow(folder)
        #expect(files.allSatisfy { $0.hasPrefix("Tones FM/") && !$0.contains("..") && !$0.hasSuffix(".part") })
        #expect(files.contains("Tones FM/Ünïcödé Tönes – Sœur's Song; Part=2.mp3") ||
                files.contains("Tones FM/Ünïcödé Tönes - Sœur's Song; Part=2.mp3"))
        #expect(files.contains("Tones FM/Guns N' Roses - Sweet Child o' Mine.mp3"))
        #expect(files.filter { $0.hasPrefix("Tones FM/incomplete/") }.count == 2)
        #expect(tracks.allSatisfy { URL(fileURLWithPath: $0.path).standardizedFileURL.path.hasPrefix(folder.path + "/") })
    }

    static func xingLength(_ path: String) -> Int {
        guard let bytes = try? [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) else { return 0 }
        let offset = ID3v2Header(bytes)?.totalLength ?? 0
        return MP3FrameHeader(bytes[offset...])?.frameLength ?? 0
    }

    @Test("--no-tags writes frames only; --min-track moves short tracks to incomplete/")
    func noTagsAndMinimum() async throws {
        let server = try await TestStationServer.start(Self.configuration(), program: Self.program)
        defer { Task { try? await server.stop() } }
        let (_, _, finished) = try await Self.record(server) {
            RecordingOptions(outputDirectory: $0, writesTags: false, minimumTrackSeconds: 5)
        }
        let tracks = finished.all
        #expect(!tracks.isEmpty)
        #expect(tracks.allSatisfy { !$0.isComplete })
        for track in tracks {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: track.path)))
            #expect(ID3v2Header(bytes) == nil)
            #expect(MP3FrameHeader(bytes) != nil)
            #expect(track.path.contains("/incomplete/"))
        }
    }

    @Test("--on-track-done runs once per complete track with the path and the title in its environment")
    func onTrackDone() async throws {
        let server = try await TestStationServer.start(Self.configuration(), program: Self.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let log = folder.appendingPathComponent("hooks.txt").path
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", folder.appendingPathComponent("out").path,
                                           "--no-silence-search", "--on-track-done", "printf '%s|%s\\n' \"$AIRTAP_TITLE\" \"$1\" >> '\(log)'; true"])
        #expect(result.status == 0, "\(result.stderr)")
        let complete = filesBelow(folder.appendingPathComponent("out")).filter { $0.hasSuffix(".mp3") && !$0.contains("/incomplete/") }
        // The hooks run without blocking the recording, so the last ones may still be running
        // when airtap has exited: wait for a line per complete track.
        func hookLines() -> [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        try await waitFor("a hook line per complete track (\(complete.count))") { !complete.isEmpty && hookLines().count >= complete.count }
        let lines = hookLines()
        #expect(lines.count == complete.count)
        for line in lines {
            let parts = line.split(separator: "|", maxSplits: 1).map(String.init)
            #expect(parts.count == 2 && FileManager.default.fileExists(atPath: parts[1]), "\(line)")
            #expect(parts.count == 2 && (try? RecordedFileContents(path: parts[1]))?.tag?.title == parts[0], "\(line)")
        }
    }

    @Test("--single writes one file and a cue sheet whose INDEX times are the cuts")
    func singleFile() async throws {
        let server = try await TestStationServer.start(Self.configuration(), program: Self.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let path = folder.appendingPathComponent("all.mp3").path
        let result = try await AirtapBinary.run(["record", server.streamURL, "--single", path, "--retries", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let contents = try RecordedFileContents(path: path)
        let sentCount = Self.program.audioByteCount(from: 0, seconds: 13)
        #expect(contents.audio == Self.program.audio(from: 0, count: sentCount))
        #expect(contents.tag == nil)

        let cue = try String(contentsOfFile: path + ".cue", encoding: .utf8)
        #expect(cue.contains("FILE \"all.mp3\" MP3"))
        let indexes = cue.split(separator: "\n").filter { $0.contains("INDEX 01") }.map { $0.split(separator: " ").last.map(String.init) ?? "" }
        let announced = StationTransmission.render(program: Self.program, metaint: 4000, audioCount: sentCount,
                                                   streamURL: server.streamURL).titles
        #expect(indexes.count == announced.count)
        // Each INDEX is the first frame at or after the title's byte position, in CD frames (75/s).
        var expected = ["00:00:00"]
        for title in announced.dropFirst() {
            let frame = Self.program.frameIndex(atOrAfter: title.audioOffset)
            expected.append(CueSheet.indexTime(samples: frame * 1152, sampleRate: 44100))
        }
        #expect(indexes == expected)
    }

    @Test("--single next to an earlier run's file, cue sheet and leftover .part: all untouched, the new run is 'all (2).mp3' with its own cue")
    func singleFileBesideAnEarlierRun() async throws {
        let server = try await TestStationServer.start(Self.configuration(maxSeconds: 5), program: Self.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let path = folder.appendingPathComponent("all.mp3").path
        let earlier: [(String, String)] = [(path, "old audio"), (path + ".cue", "old cue"), (folder.appendingPathComponent("all (2).mp3.part").path, "crashed run")]
        for (file, text) in earlier { try text.write(toFile: file, atomically: true, encoding: .utf8) }
        let result = try await AirtapBinary.run(["record", server.streamURL, "--single", path, "--retries", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        for (file, text) in earlier { #expect(try String(contentsOfFile: file, encoding: .utf8) == text, "\(file)") }
        let fresh = folder.appendingPathComponent("all (3).mp3").path
        let contents = try RecordedFileContents(path: fresh)
        #expect(contents.audio == Self.program.audio(from: 0, count: Self.program.audioByteCount(from: 0, seconds: 5)))
        #expect(try String(contentsOfFile: fresh + ".cue", encoding: .utf8).contains("FILE \"all (3).mp3\" MP3"))
    }

    @Test("--max-size stops at the limit, per track and with --single: no more audio than the limit and one frame")
    func maxSize() async throws {
        let server = try await TestStationServer.start(Self.configuration(maxSeconds: 60), program: Self.program)
        defer { Task { try? await server.stop() } }
        let limit = 100_000
        let frame = 418  // 128 kbit/s at 44.1 kHz, with padding
        let tracks = try AirtapBinary.temporaryFolder()
        let perTrack = try await AirtapBinary.run(["record", server.streamURL, "--max-size", "\(limit)", "--out", tracks.path, "--retries", "0"])
        #expect(perTrack.status == 0, "\(perTrack.stderr)")
        let files = filesBelow(tracks).filter { $0.hasSuffix(".mp3") }
        let audio = try files.reduce(0) { $0 + (try RecordedFileContents(path: tracks.appendingPathComponent($1).path)).audio.count }
        #expect(audio >= limit && audio < limit + frame, "\(audio) bytes in \(files)")

        let single = try AirtapBinary.temporaryFolder().appendingPathComponent("all.mp3").path
        let one = try await AirtapBinary.run(["record", server.streamURL, "--max-size", "\(limit)", "--single", single, "--retries", "0"])
        #expect(one.status == 0, "\(one.stderr)")
        let count = try RecordedFileContents(path: single).audio.count
        #expect(count >= limit && count < limit + frame, "\(count)")
    }

    @Test("SIGTERM mid-track: exit 0, no .part left, the partial track whole in incomplete/")
    func sigterm() async throws {
        let server = try await TestStationServer.start(Self.configuration(maxSeconds: nil, pace: .realtime), program: Self.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let process = try AirtapBinary.start(["record", server.streamURL, "--out", folder.path])
        defer { ChildProcesses.terminate(process) }
        // Stop mid-track: once one track is complete and the next is growing.
        try await waitFor("a complete track and a growing one") {
            let files = filesBelow(folder)
            return files.contains { $0.hasSuffix(".mp3") && !$0.contains("/incomplete/") } && files.contains { $0.hasSuffix(".part") }
        }
        process.terminate()
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(process.terminationStatus == 0)
        let files = filesBelow(folder)
        #expect(!files.contains { $0.hasSuffix(".part") })
        let recorded = try files.filter { $0.hasSuffix(".mp3") }.map { try RecordedFileContents(path: folder.appendingPathComponent($0).path) }
        let incomplete = files.filter { $0.contains("/incomplete/") }
        #expect(incomplete.count >= 1)
        // Whatever was received is on disk: the tracks, joined by their TRCK order, are the stream's start.
        let ordered = recorded.sorted { Int($0.tag?["TRCK"] ?? "") ?? 0 < Int($1.tag?["TRCK"] ?? "") ?? 0 }
        let audio = ordered.flatMap(\.audio)
        #expect(audio.count > 24_000)
        #expect(audio == Self.program.audio(from: 0, count: audio.count))
    }

    @Test("Two stations in one process both record; a second process on the same station exits 4")
    func twoStationsAndLock() async throws {
        // Endless streams: process A is stopped by the test, so nothing depends on timing.
        let first = try await TestStationServer.start(Self.configuration(maxSeconds: nil, pace: .realtime), program: Self.program)
        let second = try await TestStationServer.start(Self.configuration(maxSeconds: nil, pace: .realtime), program: Self.program)
        defer { Task { try? await first.stop(); try? await second.stop() } }
        let folder = try AirtapBinary.temporaryFolder(with: """
            {"stations": [{"id": "one", "name": "One", "url": "\(first.streamURL)"},
                          {"id": "two", "name": "Two", "url": "\(second.streamURL)"}]}
            """)
        let process = try AirtapBinary.start(["record", "one", "two", "--out", "out", "--retries", "0"], in: folder)
        defer { ChildProcesses.terminate(process) }
        let out = folder.appendingPathComponent("out")
        // Generous: under ThreadSanitizer at the suite's start the child took over a minute.
        try await waitFor("both stations recording", seconds: 240, diagnosis: { "\(filesBelow(out))" }) {
            let files = filesBelow(out)
            return files.contains { $0.hasPrefix("One/") && $0.hasSuffix(".part") }
                && files.contains { $0.hasPrefix("Two/") && $0.hasSuffix(".part") }
        }
        let blocked = try await AirtapBinary.run(["record", "one", "--out", "out", "--for", "2s"], in: folder)
        #expect(blocked.status == 4)
        #expect(blocked.stderr.contains("already"), "\(blocked.stderr)")
        process.terminate()
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(process.terminationStatus == 0)
        let files = filesBelow(out)
        #expect(files.contains { $0.hasPrefix("One/") && $0.hasSuffix(".mp3") })
        #expect(files.contains { $0.hasPrefix("Two/") && $0.hasSuffix(".mp3") })
        #expect(first.connectionsServed == 1 && second.connectionsServed == 1)
    }
}

@Suite("Recorded files as players read them")
struct RecordedFilePlayerTests {
    @Test("ffprobe reads the exact duration from the Xing frame, and the UTF-8 tags")
    func ffprobe() async throws {
        let server = try await TestStationServer.start(RecordTests.configuration(), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let (_, _, finished) = try await RecordTests.record(server) { RecordingOptions(outputDirectory: $0, writesID3v1: true) }
        let track = try #require(finished.all.first { $0.isComplete && $0.info?.artist == "Ünïcödé Tönes" })

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        process.arguments = ["-hide_banner", "-show_entries", "format=duration:format_tags=title,artist,album",
                             "-of", "default=noprint_wrappers=1", track.path]
        let output = ChildProcesses.pipe(), errors = ChildProcesses.pipe()
        process.standardOutput = output
        process.standardError = errors
        try ChildProcesses.spawn(process)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let warnings = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(!warnings.contains("Estimating duration"), "\(warnings)")
        let duration = text.split(separator: "\n").first { $0.hasPrefix("duration=") }.flatMap { Double($0.dropFirst(9)) }
        let exact = Double(track.frameCount * 1152) / 44100
        #expect(abs((duration ?? 0) - exact) < 0.03, "ffprobe says \(String(describing: duration)), frames say \(exact)")
        #expect(text.contains("TAG:title=Sœur's Song; Part=2"))
        #expect(text.contains("TAG:artist=Ünïcödé Tönes"))
        #expect(text.contains("TAG:album=Tones FM"))
        // --id3v1: the last 128 bytes are an ID3v1 tag.
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: track.path)))
        #expect(bytes.suffix(128).prefix(3).elementsEqual("TAG".utf8))
    }
}
