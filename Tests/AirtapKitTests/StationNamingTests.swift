@testable import AirtapKit
@testable import AirtapStations
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// A station given as a bare URL is named by its stream.
@Suite("Bare URL station names")
struct StationNamingTests {
    @Test("The folder and album come from icy-name; without one, from the URL")
    func namedFromICYName() async throws {
        let named = StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .fast, maxSeconds: 14, name: "Radio \u{1B}[31mÜber/../Cool")
        try await withStation(named) { server in
            let folder = try AirtapBinary.temporaryFolder()
            // To the stream's end (14 s, sent at once): under a limit of seconds a loaded machine's
            // first audio could come after it (exit 2).
            let result = try await AirtapBinary.run(["record", server.streamURL, "-o", "out", "--retries", "0"], in: folder)
            #expect(result.status == 0, "\(result.stderr)")
            let files = filesBelow(folder.appendingPathComponent("out")).filter { $0.hasSuffix(".mp3") }
            #expect(!files.isEmpty)
            // The escape character is gone, the slashes cannot make folders.
            #expect(files.allSatisfy { $0.hasPrefix("Radio [31mÜber") && !$0.hasPrefix("127.0.0.1") }, "\(files)")
            let first = try #require(files.first)
            let tag = try RecordedFileContents(path: folder.appendingPathComponent("out/\(first)").path).tag
            #expect(tag?["TALB"] == "Radio [31mÜber/../Cool")
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("out/\(Station(adHocURL: server.streamURL).id)").path))
        }
        let unnamed = StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .fast, maxSeconds: 14, name: "")
        try await withStation(unnamed) { server in
            let folder = try AirtapBinary.temporaryFolder()
            // To the stream's end (14 s, sent at once): under a limit of seconds a loaded machine's
            // first audio could come after it (exit 2).
            let result = try await AirtapBinary.run(["record", server.streamURL, "-o", "out", "--retries", "0"], in: folder)
            #expect(result.status == 0, "\(result.stderr)")
            let files = filesBelow(folder.appendingPathComponent("out")).filter { $0.hasSuffix(".mp3") }
            #expect(!files.isEmpty)
            #expect(files.allSatisfy { $0.hasPrefix("\(Station(adHocURL: server.streamURL).id)/") }, "\(files)")
        }
    }

    @Test("Two recordings of one bare URL into one folder: the second exits 4, and no folder named after the URL is left")
    func bareURLLock() async throws {
        // Endless: process A is stopped by the test, so nothing depends on timing.
        let server = try await TestStationServer.start(RecordTests.configuration(maxSeconds: nil, pace: .realtime), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let out = folder.appendingPathComponent("out")
        let process = try AirtapBinary.start(["record", server.streamURL, "-o", "out", "--retries", "0"], in: folder)
        defer { ChildProcesses.terminate(process) }
        try await waitFor("recording under the station's name") {
            filesBelow(out).contains { $0.hasPrefix("Airtap Test Station/") && $0.hasSuffix(".part") }
        }
        let blocked = try await AirtapBinary.run(["record", server.streamURL, "-o", "out", "-t", "2s"], in: folder)
        #expect(blocked.status == 4)
        #expect(blocked.stderr.contains("already"), "\(blocked.stderr)")
        process.terminate()
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        #expect(process.terminationStatus == 0)
        let folders = (try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? []
        #expect(folders.filter { !$0.hasPrefix(".") }.sorted() == ["Airtap Test Station"], "\(folders)")
        #expect(folders.contains(".airtap-\(Station(adHocURL: server.streamURL).id).lock"), "\(folders)")
    }

    @Test("icy-name becomes one printable line of at most 200 characters")
    func nameFromICYName() {
        #expect(Station.name(fromICYName: "  Jazz\u{0}\u{202E}FM\n ") == "JazzFM")
        #expect(Station.name(fromICYName: " \u{7} ") == nil)
        #expect(Station.name(fromICYName: nil) == nil)
        #expect(Station.name(fromICYName: String(repeating: "x", count: 5000))?.count == 200)
        #expect(Station(adHocURL: "http://127.0.0.1:8765/s").isNamedByStream)
    }
}
