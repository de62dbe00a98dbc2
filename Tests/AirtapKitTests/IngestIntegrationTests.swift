import AirtapKit
import AirtapTestSupport
import Glibc
import ICYWire
@testable import TestStation
import Testing

/// Real libcurl against the real test station over 127.0.0.1.
@Suite("Ingest over loopback")
struct IngestIntegrationTests {
    @Test("HTTP/1.0 and SHOUTcast v1: head, format, every frame and every title, in order",
          arguments: [StationConfiguration.Style.http10, .shoutcastV1])
    func wholeStream(style: StationConfiguration.Style) async throws {
        try await withStation(Programs.configuration(style)) { server in
            let sink = await ingest([server.streamURL])
            #expect(sink.endReason == .endOfStream)

            let head = try #require(sink.heads.first)
            #expect(head.response.protocolName == (style == .shoutcastV1 ? "ICY" : "HTTP/1.0"))
            #expect(head.response.statusCode == 200)
            #expect(head.response.icyName == server.configuration.name)
            #expect(head.response.icyGenre == server.configuration.genre)
            #expect(head.response.icyBitrate == 128)
            #expect(head.response.metaint == .interval(server.configuration.metaint))

            let format = try #require(sink.formats.first)
            #expect(format.codec == .mp3)
            #expect(format.sampleRate == 44100)
            #expect(format.channels == 2)
            #expect(format.bitrate == 128_000)

            // Every byte the station sent after the head is in the packets, and nothing else.
            let expectedCount = server.program.audioByteCount(from: 0, seconds: 14)
            #expect(sink.audio == server.program.audio(from: 0, count: expectedCount))

            // Every announced title, in order, at the position it was announced.
            let announced = announcedTitles(server, audioCount: expectedCount)
            #expect(sink.titles.map(\.info.raw) == announced.map(\.title))
            #expect(sink.titles.map(\.position) == announced.map(\.audioOffset))
            #expect(Set(announced.map(\.title)).count == server.program.tracks.count)
        }
    }

    @Test("Each title comes after every packet that starts before it, and before every other")
    func titleOrdering() async throws {
        try await withStation { server in
            let sink = await ingest([server.streamURL])
            #expect(sink.titles.count >= 4)
            for (index, event) in sink.all.enumerated() {
                guard case .metadata(let change) = event else { continue }
                let packets = sink.all.enumerated().compactMap { item -> (Int, Packet)? in
                    if case .packet(let packet) = item.element { (item.offset, packet) } else { nil }
                }
                #expect(packets.filter { $0.0 < index }.allSatisfy { $0.1.position < change.position })
                #expect(packets.filter { $0.0 > index }.allSatisfy { $0.1.position >= change.position })
            }
        }
    }

    @Test("A .pls and an .m3u resolve to the stream", arguments: ["/listen.pls", "/listen.m3u"])
    func playlists(path: String) async throws {
        try await withStation { server in
            let sink = await ingest([server.url(path: path)])
            #expect(sink.endReason == .endOfStream)
            #expect(sink.heads.first?.url == server.streamURL)
            #expect(!sink.packets.isEmpty)
            #expect(!sink.titles.isEmpty)
        }
    }

    @Test("A playlist behind a redirect: its relative entries resolve where it was finally fetched from", arguments: ["pls", "m3u"])
    func playlistBehindARedirect(kind: String) async throws {
        let audio = HostileServerTests.audio
        let server = try await ScriptedServer.start { path in
            switch path {
            case "/old/listen.\(kind)":
                return [.send(ScriptedServer.head("HTTP/1.1 302 Found", ["Location: /new/listen.\(kind)", "Content-Length: 0"])), .close]
            case "/new/listen.\(kind)":
                let text = kind == "pls" ? "[playlist]\nNumberOfEntries=1\nFile1=stream\n" : "#EXTM3U\nstream\n"
                let type = kind == "pls" ? "audio/x-scpls" : "audio/x-mpegurl"
                return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: \(type)", "Content-Length: \(text.utf8.count)"])
                              + Array(text.utf8)), .close]
            case "/new/stream":
                return [.send(ScriptedServer.head("HTTP/1.0 200 OK", ["Content-Type: audio/mpeg"]) + audio), .close]
            default:
                return [.send(ScriptedServer.head("HTTP/1.1 404 Not Found", ["Content-Length: 0"])), .close]
            }
        }
        defer { Task { try? await server.stop() } }
        let sink = await ingest([server.url("/old/listen.\(kind)")])
        #expect(sink.endReason == .endOfStream)
        #expect(sink.heads.first?.url == server.url("/new/stream"))
        let exact = sink.audio == audio
        #expect(exact, "\(sink.audio.count) of \(audio.count) bytes")
    }

    @Test("A 404 is a typed error naming the status")
    func notFound() async throws {
        try await withStation { server in
            let sink = await ingest([server.url(path: "/nothing-here")])
            guard case .error(.httpStatus(_, let status, _, _)) = sink.endReason else {
                Issue.record("expected an HTTP status error, got \(String(describing: sink.endReason))")
                return
            }
            #expect(status == 404)
            #expect(sink.packets.isEmpty)
        }
    }

    @Test("A text/html answer is not audio")
    func htmlPage() async throws {
        try await withStation { server in
            let sink = await ingest([server.url(path: "/page.html")])
            guard case .error(let error) = sink.endReason, case .notAudio(_, 200, let type) = error else {
                Issue.record("expected a not-audio error, got \(String(describing: sink.endReason))")
                return
            }
            #expect(type == "text/html")
            #expect(error.exitCode == 2)
        }
    }

    @Test("Fallback URLs are tried in order")
    func fallback() async throws {
        try await withStation { server in
            let sink = await ingest([server.url(path: "/status/503"), server.streamURL])
            #expect(sink.endReason == .endOfStream)
            #expect(sink.heads.count == 1)
            #expect(!sink.packets.isEmpty)
        }
    }

    @Test("A refused connection is a network error")
    func refused() async throws {
        // A socket bound but not listening: connections to its port are refused, and no other
        // test's server can be given the port while we hold it.
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        try #require(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let sink = await ingest(["http://127.0.0.1:\(port)/stream"])
        guard case .error(.network) = sink.endReason else {
            Issue.record("expected a network error, got \(String(describing: sink.endReason))")
            return
        }
    }

    @Test("A stop mid-stream ends with the limit and whole frames only")
    func stopMidStream() async throws {
        var configuration = Programs.configuration()
        configuration.pace = .realtime
        configuration.maxSeconds = nil
        try await withStation(configuration) { server in
            // Stopped once audio flows, not after a fixed time: under ThreadSanitizer on a loaded
            // machine 1.5 s once passed before the first frame.
            let sink = await ingest([server.streamURL], stopOnce: { $0.packets.count >= 20 })
            #expect(sink.endReason == .limitReached)
            #expect(!sink.packets.isEmpty)
            #expect(sink.audio == server.program.audio(from: 0, count: sink.audio.count))
            #expect(sink.packets.allSatisfy { $0.bytes.count == $0.header.frameLength })
        }
    }
}
