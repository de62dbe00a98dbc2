@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapStations
import AirtapTestSupport
import Foundation
import ICYWire
import Logging
import TestStation
import Testing

/// A title storm with the library on: the recorder never waits on the index. Another writer
/// holds the index's lock (as another airtap committing would) while a track finishes every few
/// frames; the tracks are all indexed once the lock is free.
@Suite struct TitleStormLibraryTests {
    typealias Gap = RecordingAcrossAGapTests

    @Test(.timeLimit(.minutes(5))) func tracksFinishWhileAnotherWriterHoldsTheIndex() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("library.sqlite").path
        let library = try #require(try TrackLibrary.open(path: path, dedupe: false, defersIndexing: true, environment: [:],
                                                          logger: Logger(label: "test")))
        // Python's sqlite3 takes the write lock and keeps it until its stdin closes.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        holder.arguments = ["-c", "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                            + "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\nsys.stdin.read()\nc.execute('COMMIT')", path]
        let input = ChildProcesses.pipe(), output = ChildProcesses.pipe()
        holder.standardInput = input
        holder.standardOutput = output
        try ChildProcesses.spawn(holder)
        let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        #expect(line.hasPrefix("locked"), "\(line)")

        var options = RecordingOptions(outputDirectory: folder.appendingPathComponent("out").path)
        options.trackFloor = .none
        options.trackStarts = nil
        options.library = library
        let finished = FinishedTracks()
        let recorder = TrackRecorder(station: Station(id: "storm", name: "Storm FM", urls: ["http://127.0.0.1:9/"]),
                                     options: finished.collecting(options), logger: Logger(label: "test")) { _ in }
        var events = [try Gap.head()]
        // Four seconds a track: enough audio for a fingerprint each.
        for start in stride(from: 0, to: 960, by: 160) {
            events.append(Gap.title("Storm - \(start)", atFrame: start))
            events += Gap.packets(start..<(start + 160))
        }
        events.append(.ended(.endOfStream))
        // Each track waiting on the lock would take SQLite's busy timeout (10 s): 6 of them, a minute.
        let elapsed = try ContinuousClock().measure { for event in events { try recorder.receive(event) } }
        #expect(elapsed < .seconds(8), "\(elapsed) for \(finished.all.count) tracks")
        let tracks = finished.all
        #expect(tracks.count == 6)

        try input.fileHandleForWriting.close()
        holder.waitUntilExit()
        library.finishPending()
        let indexed = try LibraryIndex(path: path).list()
        #expect(Set(indexed.map(\.path)) == Set(tracks.map(\.path)), "\(indexed.count) of \(tracks.count) indexed")
        #expect(indexed.allSatisfy { $0.storedFingerprintValues != nil }, "every entry with its fingerprint")
    }
}
