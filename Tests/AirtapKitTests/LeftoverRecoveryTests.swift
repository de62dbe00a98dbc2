@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapStations
import AirtapTestSupport
import Foundation
import ICYWire
import Logging
@testable import TestStation
import Testing

/// What a killed run left: finished for bare URLs too, and never at the cost of a file outside
/// the output folder or of every later start.
@Suite("Leftover recovery: bare URLs, hard links, sparse files")
struct LeftoverRecoveryTests {
    static func frames(_ count: Int) -> [UInt8] {
        RecordingAcrossAGapTests.packets(0..<count).flatMap { event -> [UInt8] in
            if case .packet(let packet) = event { Array(packet.bytes) } else { [] }
        }
    }

    @Test("A hard link to a file outside --out at a .part name: the file is not cut or written, the link is set aside with a warning")
    func hardLinkedLeftover() throws {
        let out = try AirtapBinary.temporaryFolder()
        let outside = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: out); try? FileManager.default.removeItem(at: outside) }
        let folder = out.appendingPathComponent("Station")
        let lock = try RecordingLock.acquire(folder: "Station", below: out.path, stationID: "mine", wait: false)
        // Frames then text: finishing it would cut the text off and write an Info frame.
        let victim = outside.appendingPathComponent("precious.mp3")
        let original = Data(Self.frames(20) + Array("precious tail".utf8))
        try original.write(to: victim)
        try FileManager.default.linkItem(at: victim, to: folder.appendingPathComponent("Song.mp3.part"))
        let finished = LeftoverParts.finish(stationFolder: "Station", below: out.path, holding: lock, logger: Logger(label: "test"))
        #expect(finished.isEmpty)
        #expect(try Data(contentsOf: victim) == original)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.contains("Song.mp3.part.unfinished"), "\(names)")
        #expect(!names.contains("Song.mp3.part"))
        // Set aside once: the next start has nothing to look at.
        #expect(LeftoverParts.finish(stationFolder: "Station", below: out.path, holding: lock, logger: Logger(label: "test")).isEmpty)
        #expect(try Data(contentsOf: victim) == original)
    }

    @Test("A sparse .part of 4 GiB: set aside at once, never scanned; frames before a hole are finished, the hole cut off")
    func sparseLeftovers() throws {
        let out = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: out) }
        let folder = out.appendingPathComponent("Station")
        let lock = try RecordingLock.acquire(folder: "Station", below: out.path, stationID: "mine", wait: false)
        let empty = folder.appendingPathComponent("Empty.mp3.part")
        #expect(FileManager.default.createFile(atPath: empty.path, contents: nil))
        #expect(truncate(empty.path, 4 << 30) == 0)
        // The last frame is followed by zeros, not by a next frame or the end: not trusted.
        let audio = Self.frames(39)
        let withHole = folder.appendingPathComponent("Audio.mp3.part")
        try Data(Self.frames(40)).write(to: withHole)
        #expect(truncate(withHole.path, 4 << 30) == 0)

        let descriptor = open(withHole.path, O_RDONLY)
        defer { close(descriptor) }
        let survey = try LeftoverParts.survey(descriptor, path: withHole.path)
        #expect(survey.frameCount == 39)
        #expect(survey.scannedBytes <= audio.count + 3 * LeftoverParts.maxBytesWithoutAudio, "scanned \(survey.scannedBytes) bytes")

        let finished = LeftoverParts.finish(stationFolder: "Station", below: out.path, holding: lock, logger: Logger(label: "test"))
        #expect(finished == [folder.appendingPathComponent("incomplete/Audio.mp3").path])
        #expect(try RecordedFileContents(path: folder.appendingPathComponent("incomplete/Audio.mp3").path).audio == audio)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(names.contains("Empty.mp3.part.unfinished"), "\(names)")
        #expect(!names.contains { $0.hasSuffix(".part") }, "\(names)")
    }

    @Test("A bare URL's recording killed mid-track: the next run of the URL finishes its .part into incomplete/")
    func bareURLLeftoverFinished() async throws {
        let server = try await TestStationServer.start(RecordTests.configuration(maxSeconds: nil, pace: .realtime), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("out")
        let first = try ChildProcesses.startAirtap(["record", server.streamURL, "-o", out.path, "--retries", "0"], in: folder, name: "killed")
        defer { if first.isRunning { kill(first.processIdentifier, SIGKILL) } }
        func part() -> String? { filesBelow(out).first { $0.hasSuffix(".mp3.part") } }
        func partSize() -> Int {
            guard let part = part() else { return 0 }
            return ((try? FileManager.default.attributesOfItem(atPath: out.appendingPathComponent(part).path))?[.size] as? Int) ?? 0
        }
        // The tag room, the Info frame and a second of audio on disk.
        try await waitFor("audio in the .part", seconds: 90) { partSize() >= 4096 + 418 + 16_000 }
        kill(first.processIdentifier, SIGKILL)
        #expect(await ChildProcesses.waitForExit(first, timeout: .seconds(30)))
        let dead = try #require(part())
        #expect(dead.hasPrefix("Airtap Test Station/"), "\(dead)")
        let deadAudio = try RecordedFileContents(path: out.appendingPathComponent(dead).path).audio

        // Stopped once a title shows the next run streaming (it finishes leftovers before it
        // connects): under a limit of seconds a loaded machine's first audio could come after it (exit 2).
        let run = try await AirtapBinary.launch(["record", server.streamURL, "-o", out.path, "-t", "300s"], in: folder)
        try await waitFor("the second run to stream", seconds: 120, diagnosis: { run.stderrSoFar }) {
            run.stderrSoFar.contains("title: ") || !run.isRunning
        }
        run.terminate()
        let second = try await run.result()
        #expect(second.status == 0, "\(second.stderr)")
        let files = filesBelow(out)
        #expect(!files.contains { $0.hasSuffix(".part") }, "\(files)")
        // Finished into incomplete/ under its own name, or numbered when the first run had already
        // saved a partial track of the same title there (titles repeat; a loaded run can be killed
        // a whole cycle later). The kill can land in the middle of a frame's write: finishing keeps
        // whole frames only, so the finished audio is the dead run's up to at most one cut-off frame.
        let slash = try #require(dead.firstIndex(of: "/"))
        let stem = String(dead[..<slash]) + "/incomplete" + String(dead[slash...].dropLast(".mp3.part".count))
        let candidates = files.filter { $0.hasPrefix(stem) && $0.hasSuffix(".mp3") }
        let finished = try candidates.first { path in
            let audio = try RecordedFileContents(path: out.appendingPathComponent(path).path).audio
            return deadAudio.starts(with: audio) && deadAudio.count - audio.count < 1441
        }
        #expect(finished != nil, "none of \(candidates) holds the dead run's \(deadAudio.count) bytes; files: \(files)")
    }
}
