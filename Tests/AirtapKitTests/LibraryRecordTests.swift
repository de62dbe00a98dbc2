import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// `record --library --dedupe` from real streams of real music, several recorders on one index,
/// and a SIGKILL.
@Suite(.enabled(if: RealMusic.isAvailable)) struct LibraryRecordTests {
    static let metaint = 16_000

    /// A station's whole stream: an intro (partial: we tune in during it), the song under
    /// `title`, an outro (cut short by the end), each title at the metadata block nearest its audio.
    static func stream(song: [UInt8], title: String, intro: [UInt8], outro: [UInt8]) -> [UInt8] {
        let audio = intro + song + outro
        func boundary(_ offset: Int) -> Int { max(1, Int((Double(offset) / Double(metaint)).rounded())) - 1 }
        let blocks = [
            0: HostileStreamTests.titleBlock("Airtap Test - Intro"),
            boundary(intro.count): HostileStreamTests.titleBlock(title),
            boundary(intro.count + song.count): HostileStreamTests.titleBlock("Airtap Test - Outro"),
        ]
        return HostileStreamTests.interleave(audio, metaint: metaint, blocks: blocks)
    }

    static func serve(_ body: [UInt8], name: String, hangs: Bool = false) async throws -> ScriptedServer {
        let head = ScriptedServer.head("HTTP/1.0 200 OK", ["Content-Type: audio/mpeg", "icy-name: \(name)", "icy-metaint: \(metaint)"])
        return try await ScriptedServer.start { _ in [.send(head), .send(body)] + (hangs ? [.hang] : [.wait(seconds: 0.1), .close]) }
    }

    /// The complete tracks (not in incomplete/) below `folder`.
    static func completeFiles(below folder: URL) -> [String] {
        let paths = FileManager.default.enumerator(atPath: folder.path)?.compactMap { $0 as? String } ?? []
        return paths.filter { $0.hasSuffix(".mp3") && !$0.contains("incomplete/") }.map { folder.path + "/" + $0 }.sorted()
    }

    @Test func theSameSongFromAnotherStationUnderAnotherTitleIsNotKeptAnotherSongUnderACopiedTitleIs() async throws {
        let intro = try await RealMusic.frames(RealMusic.timeToStrike, from: 100, seconds: 8, bitrate: 128)
        let outro = try await RealMusic.frames(RealMusic.timeToStrike, from: 200, seconds: 8, bitrate: 128)
        // Two stations' encoders: another bitrate, and the song starting 1.7 s later.
        let songA = try await RealMusic.frames(RealMusic.frontiers, from: 30, seconds: 60, bitrate: 128)
        let songB = try await RealMusic.frames(RealMusic.frontiers, from: 31.7, seconds: 58, bitrate: 112)
        let otherSong = try await RealMusic.frames(RealMusic.machineWars, from: 30, seconds: 60, bitrate: 128)

        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = folder.appendingPathComponent("library.sqlite").path
        func record(_ body: [UInt8], name: String) async throws -> (URL, AirtapBinary.Result) {
            let server = try await Self.serve(body, name: name)
            defer { Task { try? await server.stop() } }
            let out = folder.appendingPathComponent(name)
            let result = try await AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", out.path,
                                                     "--library", library, "--dedupe", "--log-level", "info"])
            return (out, result)
        }

        let (outA, a) = try await record(Self.stream(song: songA, title: "Alpha - Frontiers", intro: intro, outro: outro), name: "Station A")
        #expect(a.status == 0, "\(a.stderr)")
        let keptA = Self.completeFiles(below: outA)
        #expect(keptA.count == 1 && keptA.first?.hasSuffix("Alpha - Frontiers.mp3") == true, "\(keptA)")

        let (outB, b) = try await record(Self.stream(song: songB, title: "Beta - Something Else", intro: outro, outro: intro), name: "Station B")
        #expect(b.status == 0, "\(b.stderr)")
        #expect(Self.completeFiles(below: outB).isEmpty, "the same song under another title was kept")
        let notKept = b.stderr.split(separator: "\n").filter { $0.contains("not kept: same audio as") }
        #expect(notKept.contains { $0.contains("Alpha - Frontiers.mp3") && $0.contains("Something Else") }, "\(b.stderr)")

        let (outC, c) = try await record(Self.stream(song: otherSong, title: "Alpha - Frontiers", intro: intro, outro: outro), name: "Station C")
        #expect(c.status == 0, "\(c.stderr)")
        let keptC = Self.completeFiles(below: outC)
        #expect(keptC.count == 1, "another song under a copied title was not kept: \(c.stderr)")

        let list = try await AirtapBinary.run(["library", "list", "--json", "--library", library])
        #expect(list.status == 0)
        let complete = list.stdoutLines.compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["complete"] as? Bool == true else { return nil }
            return object["path"] as? String
        }
        #expect(complete.sorted() == (keptA + keptC).sorted(), "\(list.stdout)")
        // Each kept track's loudness is in the index, as its ReplayGain tags have it.
        let measured = list.stdoutLines.compactMap { line -> (loudness: Double, gain: Double)? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  object["complete"] as? Bool == true,
                  let loudness = object["loudness"] as? Double, let gain = object["gain"] as? Double else { return nil }
            return (loudness, gain)
        }
        #expect(measured.count == complete.count, "\(list.stdout)")
        #expect(measured.allSatisfy { abs($0.gain - (-18 - $0.loudness)) < 0.01 && $0.loudness < -5 && $0.loudness > -40 }, "\(list.stdout)")
        let search = try await AirtapBinary.run(["library", "search", "alpha - FRONT", "--library", library])
        #expect(search.stdoutLines.count == 3, "\(search.stdout)")  // the header and both songs
    }

    /// Two recorders and a scan write to one index at once: every track is in it, and SQLite
    /// says the file is sound.
    @Test func twoRecordersAndAScanShareOneIndex() async throws {
        let intro = try await RealMusic.frames(RealMusic.timeToStrike, from: 60, seconds: 6, bitrate: 128)
        let song = try await RealMusic.frames(RealMusic.machineWars, from: 100, seconds: 20, bitrate: 128)
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = folder.appendingPathComponent("library.sqlite").path
        let scanned = folder.appendingPathComponent("collection")
        try FileManager.default.createDirectory(at: scanned, withIntermediateDirectories: true)
        for (index, start) in [10.0, 70, 130].enumerated() {
            try await RealMusic.file(RealMusic.frontiers, from: start, seconds: 12, to: scanned.appendingPathComponent("piece \(index).ogg").path,
                                     title: "Piece \(index)", artist: "Kievernagel")
        }
        let body = Self.stream(song: song, title: "Artist - Song", intro: intro, outro: intro)
        let first = try await Self.serve(body, name: "One")
        let second = try await Self.serve(body, name: "Two")
        defer { Task { try? await first.stop(); try? await second.stop() } }
        async let one = AirtapBinary.run(["record", first.url("/"), "--retries", "0", "--out", folder.appendingPathComponent("one").path, "--library", library])
        async let two = AirtapBinary.run(["record", second.url("/"), "--retries", "0", "--out", folder.appendingPathComponent("two").path, "--library", library])
        async let scan = AirtapBinary.run(["library", "scan", scanned.path, "--library", library])
        let results = try await [one, two, scan]
        for result in results { #expect(result.status == 0, "\(result.stderr)") }
        #expect(results[2].stdout.contains("indexed 3 files"), "\(results[2].stdout)\(results[2].stderr)")

        let index = try LibraryIndex(path: library)
        #expect(try index.integrityCheck() == "ok")
        let entries = try index.list()
        // Each recorder: the intro, the song and the outro; the scan: three pieces with their tags.
        #expect(entries.count == 9, "\(entries.map(\.path))")
        #expect(Set(entries.filter { $0.codec == "Vorbis" }.compactMap(\.title)) == ["Piece 0", "Piece 1", "Piece 2"])
        #expect(entries.filter { $0.isComplete && $0.title == "Song" }.count == 2)
    }

    /// A SIGKILL of `record` leaves a sound index holding the tracks finished before it.
    @Test func theIndexSurvivesAKilledRecorder() async throws {
        let intro = try await RealMusic.frames(RealMusic.timeToStrike, from: 60, seconds: 6, bitrate: 128)
        let song = try await RealMusic.frames(RealMusic.machineWars, from: 100, seconds: 20, bitrate: 128)
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = folder.appendingPathComponent("library.sqlite").path
        let server = try await Self.serve(Self.stream(song: song, title: "Artist - Song", intro: intro, outro: intro), name: "Killed", hangs: true)
        defer { Task { try? await server.stop() } }
        let process = Process()
        process.executableURL = AirtapBinary.directory.appendingPathComponent("airtap")
        process.arguments = ["record", server.url("/"), "--retries", "0", "--out", folder.appendingPathComponent("out").path,
                             "--library", library, "--dedupe", "--stall-timeout", "10m"]
        process.environment = ProcessInfo.processInfo.environment.merging(["HOME": folder.path, "XDG_CONFIG_HOME": folder.path]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.run(process)
        defer { ChildProcesses.terminate(process) }
        // The song's entry is in once the outro's title ended it (the connection stays open).
        // The station hangs after its last byte: a long stall timeout keeps record running until the kill.
        try await waitFor("the finished song in the index", seconds: 180,
                          diagnosis: { process.isRunning ? "record runs" : "record exited with \(process.terminationStatus)" }) {
            (try? LibraryIndex(path: library).search("Song").contains { $0.isComplete }) ?? false
        }
        kill(process.processIdentifier, SIGKILL)
        #expect(await ChildProcesses.waitForExit(process, timeout: .seconds(30)))
        let index = try LibraryIndex(path: library)
        #expect(try index.integrityCheck() == "ok")
        #expect(try index.search("Artist - Song").filter(\.isComplete).count == 1)
    }

    /// A scan reads files by their structure: a text file named .mp3 is skipped with a line, a
    /// tagged Ogg file is indexed by its tags; prune drops what was deleted.
    @Test func scanSkipsWhatIsNotAudioAndPruneDropsDeletedFiles() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = folder.appendingPathComponent("library.sqlite").path
        let music = folder.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        try Data("not audio at all\n".utf8).write(to: music.appendingPathComponent("fake.mp3"))
        let song = music.appendingPathComponent("song.ogg").path
        try await RealMusic.file(RealMusic.machineWars, from: 40, seconds: 12, to: song, title: "Machine Wars", artist: "Kievernagel")
        try FileManager.default.createSymbolicLink(atPath: music.appendingPathComponent("link.ogg").path, withDestinationPath: song)

        let scan = try await AirtapBinary.run(["library", "scan", music.path, "--library", library])
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(scan.stdout.contains("indexed 1 file"), "\(scan.stdout)")
        #expect(scan.stderr.contains("fake.mp3: no audio frames"), "\(scan.stderr)")
        let found = try await AirtapBinary.run(["library", "search", "kievernagel - machine", "--json", "--library", library])
        #expect(found.stdoutLines.count == 1 && found.stdout.contains("\"codec\":\"Vorbis\""), "\(found.stdout)")

        try FileManager.default.removeItem(atPath: song)
        let prune = try await AirtapBinary.run(["library", "prune", "--library", library])
        #expect(prune.stdoutLines == ["dropped \(song)", "dropped 1 entry"], "\(prune.stdout)")
        let missing = try await AirtapBinary.run(["library", "scan", folder.appendingPathComponent("nowhere").path, "--library", library])
        #expect(missing.status == 3, "\(missing.stderr)")
    }
}
