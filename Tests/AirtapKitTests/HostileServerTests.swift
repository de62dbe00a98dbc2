import Foundation
import Locking
import ICYWire
import TestStation
import Testing

/// What real servers do wrong, each made on purpose by a scripted server on 127.0.0.1.
/// Every case: no crash, no hang, one clear line, the documented exit code.
@Suite("Hostile servers")
struct HostileServerTests {
    static let audio: [UInt8] = Programs.short.audio(from: 0, count: Programs.short.audioByteCount(from: 0, seconds: 6))
    static let rendered = StationTransmission.render(program: Programs.short, metaint: 8000,
                                                     audioCount: audio.count, streamURL: "http://127.0.0.1/")

    static func audioHead(_ extra: [String] = [], version: String = "HTTP/1.0") -> [UInt8] {
        ScriptedServer.head("\(version) 200 OK", ["Content-Type: audio/mpeg", "icy-name: Hostile", "icy-metaint: 8000"] + extra)
    }

    static func withServer<T>(_ script: @escaping @Sendable (String) -> [ScriptedServer.Step],
                              _ body: (ScriptedServer) async throws -> T) async throws -> T {
        let server = try await ScriptedServer.start(script: script)
        defer { Task { try? await server.stop() } }
        return try await body(server)
    }

    @Test("Error statuses end with exit 2 and name the status", arguments: [403, 500])
    func statuses(status: Int) async throws {
        try await Self.withServer({ _ in [.send(ScriptedServer.head("HTTP/1.0 \(status) Nope", ["Content-Type: text/plain"])), .send(Array("no".utf8)), .close] }) { server in
            let result = try AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", "out"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("\(status)"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").last?.hasPrefix("airtap: ") == true)
        }
    }

    @Test("A 200 audio answer that closes before any frame: exit 2, one line naming the status and content type")
    func emptyAudioAnswer() async throws {
        try await Self.withServer({ _ in [.send(Self.audioHead()), .close] }) { server in
            let result = try AirtapBinary.run(["probe", server.url("/")])
            #expect(result.status == 2)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("200 audio/mpeg") && lines[0].contains("no audio frames"), "\(result.stderr)")
        }
    }

    @Test("A .pls served without a content type, or as application/octet-stream, is read as a playlist", arguments: [nil, "application/octet-stream"])
    func playlistWithoutItsType(contentType: String?) async throws {
        try await Self.withServer({ path in
            guard path.hasSuffix(".pls") else { return [.send(Self.audioHead()), .send(Self.rendered.bytes), .close] }
            let fields = contentType.map { ["Content-Type: \($0)"] } ?? []
            return [.send(ScriptedServer.head("HTTP/1.0 200 OK", fields)), .send(Array("[playlist]\nFile1=/stream\nNumberOfEntries=1\n".utf8)), .close]
        }) { server in
            let result = try AirtapBinary.run(["probe", server.url("/listen.pls"), "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdoutLines.contains { $0.contains("icy-name") || $0.contains("Hostile") }, "\(result.stdoutLines)")
        }
    }

    @Test("A redirect loop and an endless redirect chain end with exit 2", arguments: ["/loop", "/chain/1"])
    func redirects(path: String) async throws {
        try await Self.withServer({ path in
            let next = path == "/loop" ? "/loop" : "/chain/\((Int(path.split(separator: "/").last ?? "0") ?? 0) + 1)"
            return [.send(ScriptedServer.head("HTTP/1.0 302 Found", ["Location: \(next)", "Content-Length: 0"])), .close]
        }) { server in
            let result = try AirtapBinary.run(["probe", server.url(path)])
            #expect(result.status == 2)
            #expect(result.stderr.lowercased().contains("redirect"), "\(result.stderr)")
        }
    }

    @Test("A server that accepts and never answers, and one that sends a byte a second, stall out",
          arguments: ["hang", "drip"])
    func stalls(kind: String) async throws {
        try await Self.withServer({ _ in
            kind == "hang" ? [.hang] : [.send(Self.audioHead()), .drip(Self.rendered.bytes, perSecond: 1)]
        }) { server in
            let started = ContinuousClock.now
            let result = try AirtapBinary.run(["probe", server.url("/"), "--stall-timeout", "1s", "--for", "60s"])
            #expect(result.status == 2, "\(result.stderr)")
            #expect(ContinuousClock.now - started < .seconds(30), "it must not hang")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
    }

    @Test("A TLS handshake with a server that does not speak TLS fails with exit 2")
    func tlsFailure() async throws {
        try await Self.withServer({ _ in [.send(Self.audioHead()), .close] }) { server in
            let result = try AirtapBinary.run(["probe", "https://127.0.0.1:\(server.port)/"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("SSL") || result.stderr.contains("TLS"), "\(result.stderr)")
        }
    }

    @Test("A Content-Length-limited answer and a chunked one record every frame and title",
          arguments: ["length", "chunked"])
    func finiteBodies(kind: String) async throws {
        let body = Self.rendered.bytes
        try await Self.withServer({ _ in
            kind == "length"
                ? [.send(Self.audioHead(["Content-Length: \(body.count)"])), .send(body), .wait(seconds: 0.2), .close]
                : [.send(Self.audioHead(["Transfer-Encoding: chunked"], version: "HTTP/1.1")),
                   .send(ScriptedServer.chunked(body, size: 777))]
        }) { server in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", folder.path])
            #expect(result.status == 0, "\(result.stderr)")
            let files = filesBelow(folder).filter { $0.hasSuffix(".mp3") }
            let contents = try files.map { try RecordedFileContents(path: folder.appendingPathComponent($0).path) }
            let ordered = contents.sorted { Int($0.tag?["TRCK"] ?? "") ?? 0 < Int($1.tag?["TRCK"] ?? "") ?? 0 }
            #expect(ordered.flatMap(\.audio) == Self.audio)
            #expect(ordered.compactMap { $0.tag?.title }.count == Self.rendered.titles.count)
        }
    }
}

@Suite("Local faults")
struct LocalFaultTests {
    @Test("A file-size limit mid-track stops with exit 3; completed files stay intact")
    func fileSizeLimit() async throws {
        // The third title is announced twice in a row, so its file is twice as long as the others:
        // the limit lets the short files through and stops the long one.
        let titles = ["A - One", "B - Two", "C - Three", "C - Three", "D - Four"]
        let configuration = StationConfiguration(metaint: 4000, trackSeconds: 2, pace: .fast, titles: titles, maxSeconds: 12)
        let program = try StationProgram(configuration: configuration)
        let server = try await TestStationServer.start(configuration, program: program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", folder.path],
                                          limits: ["--fsize=50000"])
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("cannot write"), "\(result.stderr)")
        let complete = filesBelow(folder).filter { $0.hasSuffix(".mp3") && !$0.contains("/incomplete/") }
        #expect(complete.count == 1)
        for path in complete {
            let file = try RecordedFileContents(path: folder.appendingPathComponent(path).path)
            #expect(file.tag?.title == "Two")
            #expect(file.xingCounts?.frames == file.frames.count)
            #expect(!file.frames.isEmpty)
        }
        #expect(!filesBelow(folder).contains { $0.hasSuffix(".part") })
    }
}

@Suite("A station down for the whole run")
struct StationDownTests {
    @Test("record --for against a station that answers 503 every time: retried until the limit, then exit 2 with the last error, no files")
    func downForTheWholeRun() async throws {
        let connections = Locked(0)
        let server = try await ScriptedServer.start { _ in
            connections.withLock { $0 += 1 }
            return [.send(ScriptedServer.head("HTTP/1.0 503 Service Unavailable", ["Content-Type: text/plain"])), .close]
        }
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let result = try await AirtapBinary.run(["record", server.url("/"), "--for", "2500ms", "--out", folder.path])
        #expect(result.status == 2, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("airtap: ") }
        #expect(lines.count == 1 && lines.first?.contains("503") == true, "\(result.stderr)")
        #expect(connections.withLock { $0 } >= 2, "retried, not given up at once")
        #expect(filesBelow(folder).filter { $0.hasSuffix(".mp3") }.isEmpty)
    }
}
