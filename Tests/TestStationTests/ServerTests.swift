import Foundation
@testable import TestStation
import Testing

/// Each test starts its own station on a free port, sharing the pre-encoded program.
private func withStation<T>(
    _ change: (inout StationConfiguration) -> Void = { _ in },
    _ body: (TestStationServer) async throws -> T
) async throws -> T {
    var configuration = Fixtures.configuration
    change(&configuration)
    let server = try await TestStationServer.start(configuration, program: try Fixtures.program.get())
    do {
        let result = try await body(server)
        try await server.stop()
        return result
    } catch {
        try? await server.stop()
        throw error
    }
}

@Suite struct TestStationServerTests {
    @Test func metadataClientGetsTheProgramWithTitlesInOrder() async throws {
        try await withStation({ $0.maxSeconds = 6 }) { server in
            let response = try await StationClient.fetch(port: server.port, headers: [("Icy-MetaData", "1")])
            #expect(response.statusLine == "HTTP/1.0 200 OK")
            #expect(response.header("icy-metaint") == "1000")
            #expect(response.header("Content-Type") == "audio/mpeg")
            #expect(response.header("icy-br") == "128")
            #expect(response.header("icy-name") == "Airtap Test Station")

            let program = server.program
            let audioCount = program.audioByteCount(from: 0, seconds: 6)
            let (audio, blocks, garbage) = demux(response.body, metaint: 1000)
            #expect(!garbage)
            #expect(audio.count == audioCount)
            #expect(audio == program.audio(from: 0, count: audioCount))

            // 6 s over 1-s tracks: the four titles in loop order, then the loop starts again.
            let titles = blocks.compactMap(streamTitle)
            let loopTitles = program.tracks.map(\.title)
            #expect(titles.count >= 5)
            #expect(titles.enumerated().allSatisfy { $0.element == loopTitles[$0.offset % loopTitles.count] })
            #expect(titles.contains("Ünïcödé Tönes – Sœur's Song; Part=2"))

            // And byte for byte what the pure rendering says, using the station's own record.
            let record = try #require(server.connections.last)
            #expect(record.startOffset == 0 && record.metaint == 1000 && record.audioLimit == audioCount)
            let rendered = StationTransmission.render(
                program: program, startOffset: 0, metaint: 1000, audioCount: audioCount,
                streamURL: server.configuration.stationURL)
            #expect(response.body == rendered.bytes)
        }
    }

    @Test func plainClientGetsPureAudioEndingOnAFrameBoundary() async throws {
        try await withStation({ $0.maxSeconds = 2.5 }) { server in
            let response = try await StationClient.fetch(port: server.port, path: "/;")
            #expect(response.status == 200)
            #expect(response.header("icy-metaint") == nil)
            let expectedCount = server.program.audioByteCount(from: 0, seconds: 2.5)
            #expect(response.body == server.program.audio(from: 0, count: expectedCount))
            let frames = try #require(wholeFrames(response.body), "the stream must end on a frame boundary")
            #expect(Double(frames.count * 1152) / 44100 >= 2.5)
        }
    }

    @Test func shoutcastV1StyleAnswersICY200() async throws {
        try await withStation({ $0.style = .shoutcastV1; $0.maxSeconds = 0.5 }) { server in
            let response = try await StationClient.fetch(port: server.port, path: "/", headers: [("Icy-MetaData", "1")])
            #expect(response.statusLine == "ICY 200 OK")
            #expect(response.header("icy-metaint") == "1000")
            #expect(response.body.count > 8000)
        }
    }

    @Test func headAnswersTheHeadOnly() async throws {
        try await withStation { server in
            let response = try await StationClient.fetch(port: server.port, method: "HEAD", headers: [("Icy-MetaData", "1")])
            #expect(response.status == 200)
            #expect(response.header("icy-metaint") == "1000")
            #expect(response.body.isEmpty)
        }
    }

    @Test func playlistsPointAtTheStream() async throws {
        try await withStation { server in
            let url = "http://127.0.0.1:\(server.port)/stream"
            let pls = try await StationClient.fetch(port: server.port, path: "/listen.pls")
            #expect(pls.header("Content-Type") == "audio/x-scpls")
            let plsText = String(decoding: pls.body, as: UTF8.self)
            #expect(plsText.hasPrefix("[playlist]"))
            #expect(plsText.contains("File1=\(url)\r\n"))
            #expect(plsText.contains("NumberOfEntries=1"))

            let m3u = try await StationClient.fetch(port: server.port, path: "/listen.m3u")
            #expect(m3u.header("Content-Type") == "audio/x-mpegurl")
            #expect(String(decoding: m3u.body, as: UTF8.self).hasSuffix("\n\(url)\n"))
        }
    }

    @Test func nonAudioAnswers() async throws {
        try await withStation { server in
            let page = try await StationClient.fetch(port: server.port, path: "/page.html")
            #expect(page.status == 200)
            #expect(page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(String(decoding: page.body, as: UTF8.self).contains("<html"))

            let unavailable = try await StationClient.fetch(port: server.port, path: "/status/503")
            #expect(unavailable.statusLine == "HTTP/1.0 503 Service Unavailable")
            #expect(String(decoding: unavailable.body, as: UTF8.self) == "503 Service Unavailable\n")

            let redirect = try await StationClient.fetch(port: server.port, path: "/status/302")
            #expect(redirect.status == 302)
            #expect(redirect.header("Location") == server.streamURL)

            let missing = try await StationClient.fetch(port: server.port, path: "/nothing/here")
            #expect(missing.status == 404)
            let badStatus = try await StationClient.fetch(port: server.port, path: "/status/abc")
            #expect(badStatus.status == 404)
            let post = try await StationClient.fetch(port: server.port, path: "/stream", method: "POST")
            #expect(post.status == 405)
        }
    }

    @Test func twoHundredSimultaneousFastClientsEachGetTheirBytes() async throws {
        try await withStation { server in
            let count = 24_000
            let expected = server.program.audio(from: 0, count: count)
            let bodies = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        // The timeout only catches a hang: 200 clients in a test process beside
                        // busy loops took longer than 15 s to be answered.
                        try await StationClient.fetch(port: server.port, maxBodyBytes: count, timeout: .seconds(120)).body
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(bodies.count == 200)
            #expect(bodies.allSatisfy { $0 == expected })
            #expect(server.connectionsServed == 200)
        }
    }

    @Test func realtimeStreamsAtTheNominalBitrate() async throws {
        try await withStation({ $0.pace = .realtime; $0.maxSeconds = 0.6 }) { server in
            let clock = ContinuousClock()
            let started = clock.now
            let response = try await StationClient.fetch(port: server.port)
            let elapsed = clock.now - started
            #expect(response.body == server.program.audio(from: 0, count: server.program.audioByteCount(from: 0, seconds: 0.6)))
            // Pacing: 0.6 s of audio at 128 kbps cannot arrive much sooner. No upper bound: a busy
            // machine may be slower, and speed is measured by the benchmarks, not by unit tests.
            #expect(elapsed >= .milliseconds(500))
        }
    }

    @Test func liveClientsJoinTheBroadcastOnAFrameBoundary() async throws {
        try await withStation({ $0.pace = .realtime; $0.startAtLive = true; $0.maxSeconds = 0.2 }) { server in
            // The broadcast moves on from its first frame: a client now joins inside it.
            try await waitFor("the broadcast to pass its first frame") { server.liveOffset > 0 }
            let response = try await StationClient.fetch(port: server.port)
            let record = try #require(server.connections.last)
            let start = try #require(record.startOffset)
            let program = server.program
            #expect(start > 0)
            #expect(program.streamOffset(ofFrame: program.frameIndex(atOrAfter: start)) == start)
            #expect(response.body == program.audio(from: start, count: program.audioByteCount(from: start, seconds: 0.2)))
        }
    }

    @Test func stopClosesOpenStreams() async throws {
        var configuration = Fixtures.configuration
        configuration.pace = .realtime
        let server = try await TestStationServer.start(configuration, program: try Fixtures.program.get())
        // The fetch ends with the stop; its own timeout only bounds a hang, so it outlasts the wait below.
        async let response = StationClient.fetch(port: server.port, timeout: .seconds(600))
        // Wait until the connection is streaming, then stop under it. The event, not a time: a
        // loaded machine (the whole suite, ffmpeg encoding AAC fixtures) can take seconds.
        try await waitFor("the connection to stream", seconds: 180) { server.connections.last?.startOffset != nil }
        #expect(server.openConnections == 1)
        try await server.stop()
        // The client sees the end of the stream, or a reset when the close caught unread bytes
        // in the kernel; either way the stream is over, and what arrived is the stream's start.
        do {
            let body = try await response.body
            #expect(body == server.program.audio(from: 0, count: body.count))
        } catch {
            #expect("\(error)".contains("reset"), "\(error)")
        }
        #expect(server.openConnections == 0)
        await #expect(throws: (any Error).self) { try await StationClient.fetch(port: server.port) }
    }
}
