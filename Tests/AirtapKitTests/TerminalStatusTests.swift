@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import Foundation
import ICYWire
@testable import TestStation
import Testing

/// `record` on a terminal: run under a pseudo-terminal of a given width (script(1)) and read
/// what it printed.
@Suite("record's status line on a terminal")
struct TerminalStatusTests {
    /// airtap under a pty `columns` wide; returns everything the terminal received.
    static func runOnTerminal(columns: Int, _ arguments: [String], in folder: URL) async throws -> (status: Int32, output: String) {
        let binary = AirtapBinary.directory.appendingPathComponent("airtap").path
        let command = "stty cols \(columns); exec " + ([binary] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qfec", command, "/dev/null"]
        process.currentDirectoryURL = folder
        let outputFile = folder.appendingPathComponent("terminal.out")
        _ = FileManager.default.createFile(atPath: outputFile.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: outputFile)
        process.standardInput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.run(process)
        defer { ChildProcesses.terminate(process) }
        // Polled: a blocked thread of the cooperative pool would stall the other tests.
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        return (process.terminationStatus, (try? String(contentsOf: outputFile, encoding: .utf8)) ?? "")
    }

    /// What each redraw and each line left visible: the text after the last carriage return of
    /// every line, without the erase-line escape.
    static func visibleSegments(_ output: String) -> [String] {
        output.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
            .flatMap { $0.split(separator: "\r", omittingEmptySubsequences: false) }
            .map { $0.replacingOccurrences(of: "\u{1B}[K", with: "") }
    }

    @Test("Cut to a 76-column terminal, log lines above it never inside it, a newline at exit")
    func statusLineOnNarrowTerminal() async throws {
        // Real time, and the station ends after 1.5 s: the reconnect's warning comes while the
        // status line is showing (the end is seen after the network loop's one-second rest, and
        // a loaded machine can take several seconds to start airtap: the run lasts 12 s).
        let configuration = StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime, maxSeconds: 1.5)
        try await withStation(configuration) { server in
            let folder = try AirtapBinary.temporaryFolder()
            let (status, output) = try await Self.runOnTerminal(columns: 76, ["record", server.streamURL, "-o", "out", "-t", "12s"], in: folder)
            #expect(status == 0, "\(output)")
            let statusSegments = Self.visibleSegments(output).filter { $0.contains(" MB, ") }
            #expect(statusSegments.count >= 3, "\(output)")
            for segment in statusSegments {
                #expect(segment.count <= 75, "\(segment.count): \(segment)")
            }
            #expect(statusSegments.contains { $0.hasSuffix("…") }, "the title line is long enough to be cut: \(statusSegments)")
            #expect(output.unicodeScalars.last == "\n", "\(output.suffix(80).debugDescription)")
            // The last thing on the screen is the final status, on its own line.
            let lines = output.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n")
            let lastVisible = try #require(lines.last.map { Self.visibleSegments(String($0)).last })
            #expect(lastVisible?.contains(" MB, ") == true, "\(lines.last.debugDescription)")
            // Each log line starts its own line: the status was cleared before it.
            let logLines = lines.filter { $0.contains("reconnecting in") }
            #expect(!logLines.isEmpty, "\(output)")
            for line in logLines {
                let visible = Self.visibleSegments(String(line)).last ?? ""
                #expect(visible.hasPrefix("time=20"), "\(line.debugDescription)")
            }
        }
    }

    @Test("With --log FILE on a terminal the status line still shows, and the log goes to the file")
    func statusLineWithLogFile() async throws {
        try await withStation { server in
            let folder = try AirtapBinary.temporaryFolder()
            // 20 s: a station in this test process, starved on a loaded machine, may take seconds to answer.
            let (status, output) = try await Self.runOnTerminal(columns: 100, ["record", server.streamURL, "-o", "out", "-t", "20s", "--log", "airtap.log"], in: folder)
            #expect(status == 0, "\(output)")
            #expect(Self.visibleSegments(output).contains { $0.contains(" MB, ") && $0.contains("Airtap Test Tones") }, "\(output)")
            #expect(output.unicodeScalars.last == "\n")
            let log = try String(contentsOf: folder.appendingPathComponent("airtap.log"), encoding: .utf8)
            #expect(log.contains("saved"), "\(log)")
        }
    }

    @Test("The status time is the audio received since the title, not the recorder's delayed count")
    func liveTrackClock() async throws {
        let server = try await TestStationProgramFrames.frames(seconds: 2)
        let clock = LiveTrackClock()
        #expect(clock.reading == .init(title: nil, seconds: 0))
        for packet in server.prefix(50) { clock.receive(.packet(packet)) }
        clock.receive(.metadata(TrackChange(info: TrackInfo(streamTitle: "A - B"), position: 0, source: .icy)))
        #expect(clock.reading == .init(title: "A - B", seconds: 0))
        for packet in server.dropFirst(50) { clock.receive(.packet(packet)) }
        let expected = Double(server.dropFirst(50).reduce(0) { $0 + $1.sampleCount }) / 44100
        #expect(abs(clock.reading.seconds - expected) < 1e-9)
        #expect(expected > 0.5)
    }
}

/// Whole MP3 frames of the test station's tone, as the framer cuts them.
enum TestStationProgramFrames {
    static func frames(seconds: Double) async throws -> [Packet] {
        let program = try await StationProgram.encoding(StationConfiguration(trackSeconds: seconds, titles: ["A - B"]))
        var framer = AudioFramer()
        var packets: [Packet] = []
        for event in framer.push(program.audio(from: 0, count: program.audioByteCount(from: 0, seconds: seconds))) {
            if case .packet(let packet) = event { packets.append(packet) }
        }
        return packets
    }
}
