import AirtapIngest
import AirtapKit
import AirtapStations
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
@testable import TestStation
import Testing

@Suite("Formats airtap cannot read end at once, without retries")
struct UnsupportedFormatTests {
    /// A server answering every request with `answer`, counting the requests.
    static func withServer(_ answer: [UInt8], _ body: (ScriptedServer, Locked<Int>) async throws -> Void) async throws {
        let requests = Locked(0)
        let server = try await ScriptedServer.start { _ in
            requests.withLock { $0 += 1 }
            return [.send(answer), .wait(seconds: 0.2), .close]
        }
        defer { Task { try? await server.stop() } }
        try await body(server, requests)
    }

    static func ingest(_ url: String) async -> CollectingSink {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let events = CollectingSink()
        // Retries that would otherwise go on: only a permanent answer ends this session after one request.
        let policy = ReconnectPolicy(initialDelay: 0.05, maxRetries: 5, jitter: 0)
        let session = StationSession(station: Station(id: "odd", name: "Odd", urls: [url]), loop: loop,
                                     options: IngestOptions(reconnect: policy), sinks: [events], logger: Logger(label: "test"))
        session.start()
        _ = await session.stopped()
        return events
    }

    @Test("audio/webm: one request, a typed error naming the format, exit code 2")
    func webm() async throws {
        let answer = ScriptedServer.head("HTTP/1.0 200 OK", ["Content-Type: audio/webm"]) + Array(repeating: 0x1A, count: 64)
        try await Self.withServer(answer) { server, requests in
            let events = await Self.ingest(server.url("/"))
            guard case .error(let error) = events.endReason, case .unsupportedFormat(_, let format) = error else {
                Issue.record("expected an unsupported-format error, got \(String(describing: events.endReason))")
                return
            }
            #expect(format == "audio/webm (Matroska)")
            #expect(error.description.hasSuffix("unsupported stream format: audio/webm (Matroska)"))
            #expect(error.exitCode == 2)
            #expect(requests.withLock { $0 } == 1)
            #expect(events.packets.isEmpty)
        }
    }

    @Test("An HLS playlist whose only segment is not audio: one typed error after two requests, not retried")
    func hlsWithoutAudio() async throws {
        let playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nseg1.aac\n#EXT-X-ENDLIST\n"
        let answer = ScriptedServer.head("HTTP/1.0 200 OK", ["Content-Type: application/vnd.apple.mpegurl"]) + Array(playlist.utf8)
        try await Self.withServer(answer) { server, requests in
            let events = await Self.ingest(server.url("/live.m3u8"))
            guard case .error(.stream(_, let reason)) = events.endReason else {
                Issue.record("expected a stream error, got \(String(describing: events.endReason))")
                return
            }
            #expect(reason.contains("HLS"), "\(reason)")
            #expect(requests.withLock { $0 } == 2)
            #expect(events.packets.isEmpty)
        }
    }

    @Test("record answers Matroska with one line on stderr and exit 2, at once")
    func recordCommand() async throws {
        let answer = ScriptedServer.head("HTTP/1.0 200 OK", ["Content-Type: video/webm"]) + Array(repeating: 0x1A, count: 64)
        try await Self.withServer(answer) { server, requests in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try await AirtapBinary.run(["record", server.url("/"), "--out", folder.path])
            #expect(result.status == 2, "\(result.stderr)")
            // Log lines go to stderr too; the error is the one line that starts with "airtap: ".
            let errorLines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("airtap: ") }
            #expect(errorLines.count == 1, "\(result.stderr)")
            #expect(errorLines.last?.hasSuffix("unsupported stream format: video/webm (Matroska)") == true, "\(result.stderr)")
            #expect(!result.stderr.contains("reconnecting"), "\(result.stderr)")
            #expect(requests.withLock { $0 } == 1)
        }
    }
}

@Suite("Ogg without a telling content type")
struct OggSniffingTests {
    @Test("application/octet-stream whose bytes start with an Ogg page is read as Ogg: its pages and its link's title")
    func octetStream() async throws {
        let ogg = try await OggFromFFmpeg.encode(title: "Sniffed")
        let answer = ScriptedServer.head("HTTP/1.0 200 OK", ["Content-Type: application/octet-stream"]) + ogg
        try await UnsupportedFormatTests.withServer(answer) { server, _ in
            let events = await ingest([server.url("/")])
            #expect(events.titles.map(\.info.raw) == ["Ffmpeg - Sniffed"])
            #expect(events.packets.allSatisfy { $0.header.codec == .vorbis })
            #expect(events.packets.reduce(0) { $0 + $1.bytes.count } == ogg.count)
        }
    }
}

/// A short Vorbis file ffmpeg encodes from a tone, for tests.
enum OggFromFFmpeg {
    static func encode(title: String) async throws -> [UInt8] {
        try await onOwnThread {
            let folder = try AirtapBinary.temporaryFolder()
            let output = folder.appendingPathComponent("a.ogg")
            try runFFmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=1",
                           "-c:a", "libvorbis", "-metadata", "title=\(title)", "-metadata", "artist=Ffmpeg", output.path])
            return Array(try Data(contentsOf: output))
        }
    }
}
