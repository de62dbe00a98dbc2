import AirtapKit
@testable import AirtapRecording
import AirtapStations
import AirtapSupport
import AirtapTestSupport
import Foundation
import ICYWire
import ID3Tagging
import Logging
@testable import TestStation
import Testing

/// Local faults: links planted in the output folder, a full disk, the track-done hook,
/// memory per finished track.
@Suite("Local faults: links, full disk, hooks, finished tracks")
struct LocalHardeningTests {
    typealias Gap = RecordingAcrossAGapTests

    static func recorder(in folder: URL, finished: FinishedTracks = FinishedTracks(),
                         options: ((String) -> RecordingOptions)? = nil) -> TrackRecorder {
        TrackRecorder(station: Station(id: "gap", name: "Gap FM", urls: ["http://127.0.0.1:9/"]),
                      options: finished.collecting(options?(folder.path) ?? RecordingOptions(outputDirectory: folder.path)),
                      logger: Logger(label: "test")) { _ in }
    }

    static func victim(in folder: URL) throws -> URL {
        let victim = folder.appendingPathComponent("victim.txt")
        try "precious".write(to: victim, atomically: true, encoding: .utf8)
        return victim
    }

    // MARK: Item 8: links inside --out

    @Test("A link planted at the lock file's name: refused with a clear error, its target not truncated")
    func lockFileLink() throws {
        let root = try AirtapBinary.temporaryFolder()
        let victim = try Self.victim(in: root)
        let folder = root.appendingPathComponent("out/Demo FM")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent(".airtap-demo.lock").path,
                                                   withDestinationPath: victim.path)
        #expect {
            try RecordingLock.acquire(folder: "Demo FM", below: root.appendingPathComponent("out").path, stationID: "demo", wait: false)
        } throws: { error in
            guard let error = error as? AirtapError, case .localIO(let message) = error else { return false }
            return message.contains("symbolic link")
        }
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious")

        // The output folder's lock file the same.
        let out = root.appendingPathComponent("elsewhere-out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent(".airtap.lock").path,
                                                   withDestinationPath: victim.path)
        #expect {
            try RecordingLock.acquire(folder: "Demo FM", below: out.path, stationID: "demo", wait: false)
        } throws: { error in
            guard let error = error as? AirtapError, case .localIO(let message) = error else { return false }
            return message.contains("symbolic link") && message.contains(".airtap.lock")
        }
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious")
    }

    @Test("An `incomplete` link to a folder outside --out: nothing written there, the station stops with a local error")
    func incompleteFolderLink() throws {
        let root = try AirtapBinary.temporaryFolder()
        let elsewhere = root.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let out = root.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out.appendingPathComponent("Gap FM"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out.appendingPathComponent("Gap FM/incomplete").path,
                                                   withDestinationPath: elsewhere.path)
        let recorder = Self.recorder(in: out)
        // The first track of a connection goes to incomplete/.
        for event in try [Gap.head()] + Gap.packets(0..<40) + [.ended(.endOfStream)] { try recorder.receive(event) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).isEmpty)
        guard case .localIO(let message)? = recorder.failure else {
            Issue.record("expected a local I/O failure, got \(String(describing: recorder.failure))")
            return
        }
        #expect(message.contains("symbolic link"), "\(message)")
        // What was received is still there, as a .part in the station's folder.
        #expect(filesBelow(out).contains { $0.hasPrefix("Gap FM/") && $0.hasSuffix(".mp3.part") })
    }

    @Test("A link planted at NAME.mp3.part.tag (a tag larger than its room): the target is untouched, the track is a regular file")
    func tagScratchLink() throws {
        let root = try AirtapBinary.temporaryFolder()
        let victim = try Self.victim(in: root)
        let out = root.appendingPathComponent("out")
        let finished = FinishedTracks()
        let recorder = Self.recorder(in: out, finished: finished)
        // Multi-byte text in artist and title: a tag well over the 4096 bytes reserved.
        let long = String(repeating: "é", count: 1500) + " - " + String(repeating: "ü", count: 1500)
        for event in try [Gap.head(), Gap.title(long, atFrame: 0)] + Gap.packets(0..<40) { try recorder.receive(event) }
        let station = out.appendingPathComponent("Gap FM")
        let part = try #require(try FileManager.default.contentsOfDirectory(atPath: station.path).first { $0.hasSuffix(".part") })
        try FileManager.default.createSymbolicLink(atPath: station.appendingPathComponent(part + ".tag").path,
                                                   withDestinationPath: victim.path)
        try recorder.receive(.ended(.endOfStream))
        #expect(recorder.failure == nil)
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious")
        let track = try #require(finished.all.first)
        let attributes = try FileManager.default.attributesOfItem(atPath: track.path)
        #expect(attributes[.type] as? FileAttributeType == .typeRegular)
        let contents = try RecordedFileContents(path: track.path)
        #expect(contents.tag?.title == String(repeating: "ü", count: 1500))
        #expect(contents.frames.count == 40)
    }

    @Test("A link planted at a track's final name is not replaced or written through: the track takes the next name")
    func finalNameLink() throws {
        let root = try AirtapBinary.temporaryFolder()
        let victim = try Self.victim(in: root)
        let out = root.appendingPathComponent("out")
        let incomplete = out.appendingPathComponent("Gap FM/incomplete")
        try FileManager.default.createDirectory(at: incomplete, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: incomplete.appendingPathComponent("Some Artist - Some Title.mp3").path,
                                                   withDestinationPath: victim.path)
        let finished = FinishedTracks()
        let recorder = Self.recorder(in: out, finished: finished)
        for event in try [Gap.head(), Gap.title("Some Artist - Some Title", atFrame: 0)] + Gap.packets(0..<20) + [.ended(.endOfStream)] {
            try recorder.receive(event)
        }
        #expect(recorder.failure == nil)
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious")
        let track = try #require(finished.all.first)
        #expect(track.path.hasSuffix("/incomplete/Some Artist - Some Title (2).mp3"), "\(track.path)")
        #expect(try FileManager.default.attributesOfItem(atPath: track.path)[.type] as? FileAttributeType == .typeRegular)
    }

    // MARK: Item 14: only EEXIST moves to the next name

    @Test("A file-size limit below the first write: exit 3 with one line, and not a pile of numbered .part files")
    func noNameHuntOnWriteErrors() async throws {
        let server = try await TestStationServer.start(RecordTests.configuration(), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        // 2000 bytes: the lock file fits, the 4 KiB reserved for the tag does not.
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", folder.path],
                                          limits: ["--fsize=2000"])
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").filter { $0.hasPrefix("airtap: ") }.count == 1, "\(result.stderr)")
        let audioFiles = filesBelow(folder).filter { $0.contains(".mp3") }
        #expect(audioFiles.count <= 1, "\(audioFiles)")
    }

    // MARK: Items 10 and 11: the track-done hook

    @Test("--on-track-done gets the file as $1 with nothing appended: cp \"$1\" copies it, $AIRTAP_TITLE is the title alone")
    func hookArguments() async throws {
        let server = try await TestStationServer.start(RecordTests.configuration(), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let copies = folder.appendingPathComponent("copies")
        try FileManager.default.createDirectory(at: copies, withIntermediateDirectories: true)
        let titles = folder.appendingPathComponent("titles.txt").path
        let out = folder.appendingPathComponent("out")
        let hook = "cp \"$1\" '\(copies.path)/'; printf '%s\\n' \"$AIRTAP_TITLE\" >> '\(titles)'"
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", out.path,
                                           "--no-silence-search", "--on-track-done", hook])
        #expect(result.status == 0, "\(result.stderr)")
        let complete = filesBelow(out).filter { $0.hasSuffix(".mp3") && !$0.contains("/incomplete/") }
        #expect(!complete.isEmpty)
        try await waitFor("every hook's copy and title") {
            let copied = (try? FileManager.default.contentsOfDirectory(atPath: copies.path).count) ?? 0
            let lines = ((try? String(contentsOfFile: titles, encoding: .utf8)) ?? "").split(separator: "\n").count
            return copied == complete.count && lines == complete.count
        }
        let names = Set(complete.map { URL(fileURLWithPath: $0).lastPathComponent })
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: copies.path)) == names)
        let expected = try complete.map { try RecordedFileContents(path: out.appendingPathComponent($0).path).tag?.title ?? "" }
        let lines = try String(contentsOfFile: titles, encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.sorted() == expected.sorted())
    }

    @Test("Two stations that change titles fast, one process: never more than 4 hooks at once, the rest queued or skipped with a warning")
    func hookBound() async throws {
        let titles = (1...24).map { "Artist \($0) - Title \($0)" }
        // Tracks above the track floor (shorter ones would join their neighbours), fast enough for 24 in a run.
        let configuration = StationConfiguration(metaint: 2000, trackSeconds: 1.5, pace: .fast, titles: titles, maxSeconds: 40)
        let program = try await StationProgram.encoding(configuration)
        let server = try await TestStationServer.start(configuration, program: program)
        let second = try await TestStationServer.start(configuration, program: program)
        defer { Task { try? await server.stop(); try? await second.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let runs = folder.appendingPathComponent("runs")
        let marks = folder.appendingPathComponent("marks")
        for path in [runs, marks] { try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true) }
        let out = folder.appendingPathComponent("out")
        // Each command marks itself running (a folder), counts the running ones, holds its slot a
        // while, then leaves a mark that it ended.
        let hook = """
            mkdir '\(runs.path)/'$$; n=$(ls '\(runs.path)' | wc -l); sleep 1; \
            echo $n > '\(marks.path)/'$$; rmdir '\(runs.path)/'$$
            """
        let result = try await AirtapBinary.run(["record", server.streamURL, second.streamURL, "--retries", "0", "--out", out.path,
                                           "--no-silence-search", "--on-track-done", hook])
        #expect(result.status == 0, "\(result.stderr)")
        let complete = filesBelow(out).filter { $0.hasSuffix(".mp3") && !$0.contains("/incomplete/") }
        let skipped = result.stderr.split(separator: "\n").filter { $0.contains("--on-track-done skipped") }.count
        #expect(complete.count >= 24)
        #expect(skipped >= 1, "\(result.stderr)")
        // The commands still running when airtap exited finish on their own.
        try await waitFor("the running hooks to end") {
            ((try? FileManager.default.contentsOfDirectory(atPath: runs.path)) ?? ["?"]).isEmpty
        }
        let counts = try FileManager.default.contentsOfDirectory(atPath: marks.path).map {
            Int(try String(contentsOf: marks.appendingPathComponent($0), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 99
        }
        #expect(counts.count >= 4)
        #expect(counts.count + skipped <= complete.count)
        #expect(counts.allSatisfy { $0 >= 1 && $0 <= 4 }, "\(counts)")
    }

    // MARK: A growing track's descriptors

    /// What this process's descriptors point at, as the kernel names them.
    static func openTargets() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
        }
    }

    @Test("A growing track holds its part file open and not its folder; the folder is reopened to finish it")
    func growingTrackHoldsNoFolder() throws {
        let root = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let out = root.appendingPathComponent("out")
        let finished = FinishedTracks()
        let recorder = Self.recorder(in: out, finished: finished)
        for event in try [Gap.head(), Gap.title("Artist - Growing", atFrame: 0)] + Gap.packets(0..<40) { try recorder.receive(event) }
        let station = "/" + root.lastPathComponent + "/out/Gap FM"
        let targets = try Self.openTargets()
        #expect(targets.contains { $0.contains(station + "/") && $0.hasSuffix(".mp3.part") }, "\(targets)")
        #expect(!targets.contains { $0.hasSuffix(station) || $0.hasSuffix(station + "/incomplete") }, "\(targets)")
        try recorder.receive(.ended(.endOfStream))
        #expect(recorder.failure == nil)
        let track = try #require(finished.all.first)
        #expect(track.path.hasSuffix("/out/Gap FM/incomplete/Artist - Growing.mp3"), "\(track.path)")
        #expect(try RecordedFileContents(path: track.path).frames.count == 40)
        #expect(!(try Self.openTargets()).contains { $0.contains(station) })
    }

    @Test("The station's folder moved away while a track grows: nothing is written into the folder now at its name, the part file stays whole where it went, one clear error")
    func folderReplacedWhileGrowing() throws {
        let root = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: root) }
        let out = root.appendingPathComponent("out")
        let recorder = Self.recorder(in: out)
        for event in try [Gap.head(), Gap.title("Artist - Moved", atFrame: 0)] + Gap.packets(0..<40) { try recorder.receive(event) }
        let station = out.appendingPathComponent("Gap FM")
        let moved = out.appendingPathComponent("Moved Away")
        try FileManager.default.moveItem(at: station, to: moved)
        try FileManager.default.createDirectory(at: station, withIntermediateDirectories: false)
        try recorder.receive(.ended(.endOfStream))
        guard case .localIO(let message)? = recorder.failure else {
            Issue.record("expected a local I/O failure, got \(String(describing: recorder.failure))")
            return
        }
        #expect(message.contains("moved or replaced"), "\(message)")
        #expect(filesBelow(station).isEmpty, "\(filesBelow(station))")
        let part = try #require(filesBelow(moved).first { $0.hasSuffix(".mp3.part") }, "\(filesBelow(moved))")
        // Every byte received is in it (behind the room reserved for the tag).
        let audio = Gap.packets(0..<40).reduce(0) { total, event in
            guard case .packet(let packet) = event else { return total }
            return total + packet.bytes.count
        }
        let size = try #require(try FileManager.default.attributesOfItem(atPath: moved.appendingPathComponent(part).path)[.size] as? Int)
        #expect(size >= audio, "\(size) bytes for \(audio) of audio")
    }

    // MARK: Item 13: nothing kept per finished track

    @Test("Hundreds of tracks through one recorder: every file reported once, in order, and counted")
    func everyTrackReported() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let finished = FinishedTracks()
        let recorder = Self.recorder(in: folder, finished: finished) { folder in
            // Two frames a title, all at once: every title a file, neither floor nor budget.
            var options = RecordingOptions(outputDirectory: folder, writesTags: false)
            options.trackFloor = .none
            options.trackStarts = nil
            return options
        }
        try recorder.receive(try Gap.head())
        let tracks = 300
        for index in 0..<tracks {
            try recorder.receive(Gap.title("Artist - Title \(index)", atFrame: index * 2))
            for packet in Gap.packets(index * 2..<index * 2 + 2) { try recorder.receive(packet) }
        }
        try recorder.receive(.ended(.endOfStream))
        #expect(recorder.failure == nil)
        #expect(recorder.currentStatus.filesWritten == tracks)
        #expect(finished.all.map { $0.info?.title ?? "" } == (0..<tracks).map { "Title \($0)" })
    }

    // MARK: Item 15: a killed recording

    @Test("SIGKILL mid-track: the .part holds all but about a second of what was sent (the split search's hold-back included); the next run finishes it into incomplete/ with its Info frame and tag",
          arguments: [true, false])
    func killedRecording(searchesSilence: Bool) async throws {
        // The station holds still after 8 s of every connection, until the test ends: however slow
        // the machine, the recorder is still in the first track, with a live connection, when it
        // is killed (a stream that ended instead would let it finish the track cleanly).
        var configuration = StationConfiguration(metaint: 4000, trackSeconds: 20, pace: .realtime,
                                                 titles: ["Kill Test - Long One", "Kill Test - Next One"])
        configuration.stall = .untilResumed(afterSeconds: 8)
        let stallBytes = configuration.bytesPerSecond * 8
        let server = try await TestStationServer.start(configuration)
        defer { Task { try? await server.stop() } }
        let out = try AirtapBinary.temporaryFolder()
        // A station of stations.json: its name, so its folder and lock, are known before it
        // answers (a bare URL's folder comes from icy-name, and its leftovers are not finished).
        let config = try AirtapBinary.temporaryFolder(with: #"{"stations": [{"id": "kill", "name": "Kill Station", "url": "\#(server.streamURL)"}]}"#)
        defer { try? FileManager.default.removeItem(at: config) }
        let arguments = ["record", "kill", "--stations", config.appendingPathComponent("stations.json").path,
                         "--out", out.path, "--retries", "0"] + (searchesSilence ? [] : ["--no-silence-search"])
        // Its stderr in a file, for the failure message: under a full suite on two cores a child
        // can be slow, and when it is, what it logged says why.
        // Its /metrics says how much audio it had received when it is killed: what the station sent
        // can still sit in the socket's buffer on a busy machine, and that was never received.
        // Its stall timeout outlasts the test: the station's pause is not a stall to give up on.
        let first = try ChildProcesses.startAirtap(arguments + ["--log-level", "info", "--metrics-listen", "127.0.0.1:0",
                                                                "--stall-timeout", "1h"],
                                                   in: config, name: "killed")
        defer { ChildProcesses.terminate(first) }
        func partFile() -> String? { filesBelow(out).first { $0.hasSuffix(".mp3.part") } }
        func partSize() -> Int {
            guard let part = partFile() else { return 0 }
            return ((try? FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(part).path))?[.size] as? Int) ?? 0
        }
        // Room for the tag and the Info frame, then at least 4.5 s of audio on disk.
        let bytesPerSecond = configuration.bytesPerSecond
        do {
            // Generous: only a starved machine takes long; the size reached is the event waited for.
            try await waitFor("4.5 s of audio in the .part", seconds: 120) { partSize() >= 4096 + 418 + bytesPerSecond * 9 / 2 }
        } catch {
            let log = (try? String(contentsOf: config.appendingPathComponent("killed.err"), encoding: .utf8)) ?? ""
            Issue.record("\(error); the .part has \(partSize()) bytes; running: \(first.isRunning); its log: \(log.suffix(3000))")
            if first.isRunning { kill(first.processIdentifier, SIGKILL) }
            return
        }
        let log = (try? String(contentsOf: config.appendingPathComponent("killed.err"), encoding: .utf8)) ?? ""
        let metricsPort = log.split(separator: "\n").first { $0.contains("metrics at http://127.0.0.1:") }
            .flatMap { Int($0.split(separator: ":").last?.split(separator: "/").first ?? "") }
        let port = try #require(metricsPort, "no metrics address: \(log)")
        // Asked again until the counter is there: one loaded run got an answer without it, and
        // the body is kept for the message if it never comes.
        // Then the recorder has received all the station sent before it held still, and has put it
        // on disk but for what it may hold back: the kill comes at a known point, not a guessed one.
        var received = -1
        var lastBody = ""
        let holdBack = bytesPerSecond * 3 / 2
        try await waitFor("the recorder to receive the 8 s the station sent and write it but for its hold-back",
                          seconds: 120, diagnosis: { "received \(received), on disk about \(partSize() - 4096 - 418): \(lastBody.prefix(2000))" }) {
            guard let sent = server.connections.first?.audioBytesSent, sent > stallBytes - 4096,
                  let metrics = try? await StationClient.fetch(port: port, path: "/metrics") else { return false }
            lastBody = String(decoding: metrics.body, as: UTF8.self)
            received = lastBody.split(separator: "\n")
                .first { $0.hasPrefix("airtap_record_audio_bytes_received_total{") }
                .flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
            // Counted in whole frames: the last one stays partial until more comes.
            return received > sent - 2048 && partSize() - 4096 - 418 >= received - holdBack
        }
        try #require(first.isRunning, "the recorder ended before the kill: \(log.suffix(3000))")
        kill(first.processIdentifier, SIGKILL)
        while first.isRunning { try await Task.sleep(for: .milliseconds(10)) }
        try await waitFor("the station to see the connection close") { server.connections.first?.isClosed == true }
        let sent = try #require(server.connections.first?.audioBytesSent)
        let part = try #require(partFile())
        let dead = try RecordedFileContents(path: out.appendingPathComponent(part).path)
        // What was on disk before the kill is there after it, byte for byte what the station sent:
        // the held-back tail (written a second at a time, only what is new) included.
        #expect(dead.audio == server.program.audio(from: 0, count: dead.audio.count), "the .part's audio is the station's")
        let lost = received - dead.audio.count
        print("killed recording (silence search \(searchesSilence)): \(lost) of \(received) audio bytes received were not in the .part (\(Double(lost) / Double(bytesPerSecond)) s); the station sent \(sent)")
        #expect(received > 0)
        #expect(lost <= holdBack, "lost \(lost) bytes of \(received) received (\(Double(lost) / Double(bytesPerSecond)) s)")
        #expect(dead.tag?.title == "Long One", "the provisional tag names the track")

        // The next run of the station (its lock is free now) finishes the leftover first, then
        // streams; it is stopped once a title shows audio arriving. (Under a limit of seconds a
        // loaded machine's first audio could come after it: "no answer", exit 2.)
        let run = try await AirtapBinary.launch(arguments + ["--for", "300s"])
        try await waitFor("the second run to stream", seconds: 120, diagnosis: { run.stderrSoFar }) {
            run.stderrSoFar.contains("title: ") || !run.isRunning
        }
        run.terminate()
        let second = try await run.result()
        #expect(second.status == 0, "\(second.stderr)")
        #expect(!filesBelow(out).contains { $0.hasSuffix(".part") })
        // "<station>/NAME.mp3.part" becomes "<station>/incomplete/NAME.mp3".
        let slash = try #require(part.firstIndex(of: "/"))
        let finishedPath = String(part[..<slash]) + "/incomplete" + String(part[slash...].dropLast(".part".count))
        #expect(filesBelow(out).contains(finishedPath), "\(filesBelow(out))")
        let finished = try RecordedFileContents(path: out.appendingPathComponent(finishedPath).path)
        #expect(finished.audio == dead.audio)
        #expect(finished.xingCounts?.frames == dead.frames.count)
        #expect(finished.xingCounts?.bytes == dead.audio.count + RecordTests.xingLength(out.appendingPathComponent(finishedPath).path))
        #expect(finished.tag?.title == "Long One")
    }

    @Test("Leftovers in a folder another station of the same name is recording into are left alone until its lock is free")
    func leftoversOfASharedFolder() async throws {
        let out = try AirtapBinary.temporaryFolder()
        let folder = out.appendingPathComponent("Same Name")
        var other: RecordingLock? = try RecordingLock.acquire(folder: "Same Name", below: out.path, stationID: "other", wait: false)
        let mine = try RecordingLock.acquire(folder: "Same Name", below: out.path, stationID: "mine", wait: false)
        let frames = Gap.packets(0..<30).flatMap { event -> [UInt8] in
            if case .packet(let packet) = event { Array(packet.bytes) } else { [] }
        }
        try Data(frames).write(to: folder.appendingPathComponent("Song.mp3.part"))
        #expect(LeftoverParts.finish(stationFolder: "Same Name", below: out.path, holding: mine, logger: Logger(label: "test")).isEmpty)
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("Song.mp3.part").path))
        withExtendedLifetime(other) {}
        other = nil
        // A child another test spawns at this moment holds a copy of every descriptor (the
        // other lock's too) until it calls exec, and so the lock: on a loaded machine that can
        // last a while. The lock's release is the event: finish does nothing until then.
        var finished: [String] = []
        try await waitFor("the other station's lock to be free, and the leftover finished") {
            finished = LeftoverParts.finish(stationFolder: "Same Name", below: out.path, holding: mine, logger: Logger(label: "test"))
            return !finished.isEmpty
        }
        #expect(finished == [folder.appendingPathComponent("incomplete/Song.mp3").path])
        #expect(try RecordedFileContents(path: folder.appendingPathComponent("incomplete/Song.mp3").path).audio == frames)
    }
}

@Suite("Descriptors running out mid-run")
struct DescriptorsRunOutTests {
    /// How many stations of a record log have had a title (audio arrives) or stopped for want of
    /// a descriptor.
    static func settledStations(_ log: String) -> Int {
        Set(log.split(separator: "\n").compactMap { line -> Substring? in
            guard line.contains(#"msg="title"#) || (line.contains(#"msg="stopped"#) && line.lowercased().contains("too many open files")),
                  let range = line.range(of: " station=") else { return nil }
            return line[range.upperBound...].prefix { $0 != " " }
        }).count
    }

    /// libdispatch's worker monitor traps (SIGILL) when it cannot open /proc/<tid>/stat; before
    /// the descriptor headroom, a run that used up its descriptors crashed so about one time in
    /// ten instead of reporting. Three runs make the old crash likely; the new code never may.
    @Test("record of 40 stations under 96 descriptors: exit 3 with one line, never a crash; every saved track whole",
          .waitingForChildren)
    func descriptorsRunOutMidRun() async throws {
        try await withStation(StationConfiguration(metaint: 8000, trackSeconds: 1, pace: .realtime)) { server in
            let entries = (0..<40).map { #"{ "id": "s\#($0)", "name": "S \#($0)", "url": "\#(server.streamURL)" }"# }
            let folder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [\#(entries.joined(separator: ",\n"))] }"#)
            defer { try? FileManager.default.removeItem(at: folder) }
            for run in 0..<3 {
                let out = folder.appendingPathComponent("out\(run)")
                // Stopped by the test once the descriptors ran out mid-run (--for only bounds a
                // leak): with a limit of a few seconds, a loaded machine's station had sent no
                // audio yet when it passed, and the stations waiting for it ended the run first
                // with "no answer" (exit 2).
                let record = try AirtapChild(["record", "--all", "--stations", folder.appendingPathComponent("stations.json").path,
                                              "--out", out.path, "--for", "300s", "--no-silence-search"],
                                             limits: ["--nofile=96"])
                // The event: every station receives audio (its first title) or has stopped for
                // want of a descriptor, and a track was saved with the descriptors used up. Or
                // the run ended by itself: every station stopped, out of descriptors for a
                // socket or for a track's file.
                try await waitFor("every station streaming or out of descriptors, and a saved track (run \(run))", seconds: 120) {
                    let log = record.stderr
                    return !record.process.isRunning
                        || (Self.settledStations(log) == entries.count && log.contains(#"msg="saved track"#))
                }
                if record.process.isRunning { record.process.terminate() }
                let status = try await record.waitForExit(seconds: 90)
                #expect(record.process.terminationReason == .exit, "run \(run) died of a signal: \(record.stderr.suffix(600))")
                #expect(status == 3, "run \(run): \(record.stderr.suffix(600))")
                // stderr is read on another thread: its last line may land just after the exit.
                try await waitFor("the error line", seconds: 30) { record.stderr.contains("\nairtap: ") }
                let last = record.stderr.split(separator: "\n").last.map(String.init) ?? ""
                #expect(last.hasPrefix("airtap: ") && last.lowercased().contains("too many open files"), "run \(run): \(last)")
                let saved = filesBelow(out).filter { $0.hasSuffix(".mp3") }
                for file in saved {
                    let contents = try RecordedFileContents(path: out.appendingPathComponent(file).path)
                    #expect(contents.tag != nil && !contents.frames.isEmpty, "\(file): not a whole tagged track")
                }
            }
        }
    }
}
