import AirtapTestSupport
import Foundation
import Glibc
import ICYWire
@testable import TestStation
import Testing

/// Station text (titles, head fields, the reason phrase) with terminal escapes
/// and newlines reaches no terminal, log or error line raw. Files keep the title as sent.
@Suite("Inert station text")
struct InertOutputTests {
    static let clear = "\u{1B}[2J"
    static let clipboard = "\u{1B}]52;c;SGVsbG8=\u{07}"
    static let forgedLine = "\n2026-11-23T00:00:00+0000 critical FORGED line"
    static let evilTitle = "Evil\(clear) - Song\(clipboard)\(forgedLine)"

    static func head() -> [UInt8] {
        ScriptedServer.head("HTTP/1.0 200 OK", [
            "Content-Type: audio/mpeg", "icy-metaint: 8000",
            "icy-name: Name\u{1B}]0;window title\u{07}", "icy-genre: Genre\u{1B}[31m\u{9B}2J",
        ])
    }

    static func body() -> [UInt8] {
        HostileStreamTests.interleave(HostileStreamTests.frames(0..<100), metaint: 8000, blocks: [
            0: HostileStreamTests.block(Array("StreamTitle='\(evilTitle)';".utf8)),
            3: HostileStreamTests.titleBlock("Plain - After"),
        ])
    }

    static func withServer<T>(_ steps: [ScriptedServer.Step], _ body: (ScriptedServer) async throws -> T) async throws -> T {
        let server = try await ScriptedServer.start { _ in steps }
        defer { Task { try? await server.stop() } }
        return try await body(server)
    }

    /// No ESC, no C1 CSI, and no line that a title forged.
    static func expectInert(_ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!text.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{9B}" || $0 == "\u{07}" },
                "\(what) carries a raw control character", sourceLocation: sourceLocation)
        #expect(!text.split(separator: "\n").contains { $0.hasPrefix("2026-11-23T00:00:00+0000 critical FORGED") },
                "\(what) carries a forged line", sourceLocation: sourceLocation)
    }

    @Test("record: the stderr log and --log carry the title escaped; the file's tag keeps it as sent")
    func record() async throws {
        try await Self.withServer([.send(Self.head()), .send(Self.body()), .wait(seconds: 0.1), .close]) { server in
            let folder = try AirtapBinary.temporaryFolder()
            let logFile = folder.appendingPathComponent("airtap.log")
            let toStderr = try await AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", folder.appendingPathComponent("a").path,
                                                 "--log-level", "debug"])
            #expect(toStderr.status == 0, "\(toStderr.stderr)")
            Self.expectInert(toStderr.stderr + toStderr.stdout, "record's stderr")
            #expect(toStderr.stderr.contains("\\e[2J"), "the title is logged, escaped: \(toStderr.stderr)")

            let toFile = try await AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", folder.appendingPathComponent("b").path,
                                               "--log", logFile.path, "--log-level", "debug"])
            #expect(toFile.status == 0, "\(toFile.stderr)")
            let log = try String(contentsOf: logFile, encoding: .utf8)
            Self.expectInert(log, "--log")
            // Escaped, then quoted as a logfmt value (its backslashes doubled).
            #expect(log.contains(#"\\e]52;c;SGVsbG8=\\x07"#), "the title is logged, escaped")

            // Data, not a terminal: the tag holds the title as the station sent it.
            let recorded = try HostileStreamTests.recordedAudio(folder.appendingPathComponent("b"))
            // (A newline in a title becomes a space, as before.)
            #expect(recorded.files.contains { $0.tag?.title?.hasPrefix("Song\(Self.clipboard)") == true }, "\(recorded.files.map(\.tag))")
            #expect(recorded.files.contains { $0.tag?.artist == "Evil\(Self.clear)" })
        }
    }

    @Test("probe: the text output is inert; --json stays JSON and carries the real value")
    func probe() async throws {
        try await Self.withServer([.send(Self.head()), .send(Self.body()), .wait(seconds: 0.1), .close]) { server in
            let text = try await AirtapBinary.run(["probe", server.url("/")])
            #expect(text.status == 0, "\(text.stderr)")
            Self.expectInert(text.stdout + text.stderr, "probe")
            #expect(text.stdout.contains("Name\\e]0;window title\\x07"), "\(text.stdout)")
            #expect(text.stdout.contains("Genre\\e[31m\\x9b2J"), "\(text.stdout)")

            let json = try await AirtapBinary.run(["probe", server.url("/"), "--json"])
            #expect(json.status == 0, "\(json.stderr)")
            #expect(!json.stdout.unicodeScalars.contains("\u{1B}"), "the encoder escapes ESC")
            let objects = try json.stdoutLines.map { line in
                try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let titles = objects.filter { $0["event"] as? String == "title" }.compactMap { $0["raw"] as? String }
            #expect(titles.first == Self.evilTitle)
        }
    }

    @Test("play (ALSA null): its log lines are inert")
    func play() async throws {
        try await Self.withServer([.send(Self.head()), .send(Self.body()), .wait(seconds: 0.1), .close]) { server in
            let result = try await AirtapBinary.run(["play", server.url("/"), "--device", "null", "--buffer", "0.2s", "--retries", "0",
                                               "--log-level", "debug"])
            #expect(result.status == 0, "\(result.stderr)")
            Self.expectInert(result.stdout + result.stderr, "play")
            #expect(result.stderr.contains("\\e[2J"), "the title is logged, escaped: \(result.stderr)")
        }
    }

    @Test("An error line quoting a hostile reason phrase is inert")
    func reasonPhrase() async throws {
        let head = ScriptedServer.head("HTTP/1.0 403 Forbidden\(Self.clipboard)\u{1B}[2J", ["Content-Type: text/plain"])
        try await Self.withServer([.send(head), .send(Array("no".utf8)), .close]) { server in
            let result = try await AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", "out"])
            #expect(result.status == 2)
            Self.expectInert(result.stderr, "the error line")
            #expect(result.stderr.split(separator: "\n").last?.hasPrefix("airtap: ") == true, "\(result.stderr)")
            #expect(result.stderr.contains("Forbidden\\e]52;c;SGVsbG8=\\x07\\e[2J"), "the reason is quoted, escaped: \(result.stderr)")
        }
    }

    /// Runs airtap with a pseudo-terminal as stdin, stdout and stderr (so it draws its status
    /// line), reads what it draws until `marker` appears, then stops it with SIGINT.
    /// Returns everything drawn.
    /// Async, polling the terminal without blocking: a blocked thread of the cooperative pool
    /// would stall the other tests running beside it.
    static func runOnTerminal(_ arguments: [String], until marker: String) async throws -> (output: String, status: Int32) {
        var master: Int32 = -1, slaveDescriptor: Int32 = -1
        try #require(openpty(&master, &slaveDescriptor, nil, nil, nil) == 0)
        defer { close(master) }
        let slave = FileHandle(fileDescriptor: slaveDescriptor, closeOnDealloc: false)
        let process = Process()
        process.executableURL = AirtapBinary.directory.appendingPathComponent("airtap")
        process.arguments = arguments
        process.currentDirectoryURL = FileManager.default.temporaryDirectory
        process.standardInput = slave
        process.standardOutput = slave
        process.standardError = slave
        try ChildProcesses.run(process)
        defer { ChildProcesses.terminate(process) }
        try slave.close()  // the child holds its copies: reads end (EIO) when it exits

        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var interrupted = false
        // Generous: the deadline only bounds a broken run; the marker is the event waited for.
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 0) >= 0 else { break }
            if descriptor.revents == 0, process.isRunning {
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            if descriptor.revents != 0 {
                let count = read(master, &buffer, buffer.count)
                guard count > 0 else { break }  // EIO: every copy of the slave is closed
                output += buffer[0..<count]
            }
            if !interrupted, String(decoding: output, as: UTF8.self).contains(marker) {
                interrupted = true
                process.interrupt()
            }
            if !process.isRunning && descriptor.revents == 0 { break }
        }
        if process.isRunning { process.terminate() }
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        return (String(decoding: output, as: UTF8.self), interrupted ? process.terminationStatus : -1)
    }

    /// What airtap drew, without its own escape (carriage return, erase to end of line).
    static func withoutOwnEscapes(_ drawn: String) -> String {
        drawn.replacingOccurrences(of: "\r\u{1B}[K", with: "\n")
    }

    /// About 40 s of audio at twice real time: the recorder shows a title once its track has
    /// begun (after its hold-back), so the station must go on streaming until the test has
    /// seen the status line and stops airtap.
    static func pacedSteps() -> [ScriptedServer.Step] {
        let body = HostileStreamTests.interleave(HostileStreamTests.frames(0..<1600), metaint: 8000, blocks: [
            0: HostileStreamTests.block(Array("StreamTitle='\(evilTitle)';".utf8)),
        ])
        var steps: [ScriptedServer.Step] = [.send(head())]
        for start in stride(from: 0, to: body.count, by: 16000) {
            steps += [.send(Array(body[start..<min(body.count, start + 16000)])), .wait(seconds: 0.5)]
        }
        return steps + [.close]
    }

    @Test("record on a terminal: its status line shows the title escaped", .waitingForChildren)
    func recordStatusLine() async throws {
        try await Self.withServer(Self.pacedSteps()) { server in
            let folder = try AirtapBinary.temporaryFolder()
            let (drawn, status) = try await Self.runOnTerminal(["record", server.url("/"), "--retries", "0", "--out", folder.path], until: "\\e[2J")
            #expect(status == 0, "\(drawn)")
            #expect(drawn.contains("\\e[2J"), "the status line shows the title, escaped: \(drawn.debugDescription)")
            Self.expectInert(Self.withoutOwnEscapes(drawn), "record's status line")
        }
    }

    @Test("play on a terminal (ALSA null): its status line shows the title escaped", .waitingForChildren)
    func playStatusLine() async throws {
        try await Self.withServer(Self.pacedSteps()) { server in
            let (drawn, status) = try await Self.runOnTerminal(["play", server.url("/"), "--device", "null", "--buffer", "0.2s", "--retries", "0"],
                                                         until: "\\e[2J")
            #expect(status == 0, "\(drawn)")
            #expect(drawn.contains("\\e[2J"), "the status line shows the title, escaped: \(drawn.debugDescription)")
            Self.expectInert(Self.withoutOwnEscapes(drawn), "play's status line")
        }
    }
}
