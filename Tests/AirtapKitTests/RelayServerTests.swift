import AirtapIngest
import AirtapKit
@testable import AirtapRelay
import AirtapStations
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
@testable import TestStation
import Testing

/// The relay server in process, fed by a real session from the test station (or by the test itself).
@Suite("Relay server")
struct RelayServerTests {
    static func realtime(maxSeconds: Double? = nil) -> StationConfiguration {
        StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime, maxSeconds: maxSeconds)
    }

    static func station(_ server: TestStationServer) -> Station {
        Station(id: "demo", name: "Relay Test", urls: [server.streamURL])
    }

    static let logger: Logger = {
        var logger = Logger(label: "relay-test")
        logger.logLevel = .notice
        return logger
    }()

    static func diagnosis(_ relay: RelayServer, _ listeners: [RelayTestListener]) async -> String {
        let status = await relay.status()
        let server = status.map {
            "listeners \($0.listeners), served \($0.listenersServed), packets \($0.packetsReceived), relayed \($0.bytesRelayed), "
                + "accepted \($0.connectionsAccepted), closed before a request \($0.closedBeforeRequest) (\($0.lastCloseBeforeRequest ?? "-"))"
        }
        return (server ?? "no status") + "; " + listeners.map(\.diagnosis).joined(separator: "; ")
    }

    @Test("An ICY listener gets the current title first, then each change; audio is the station's frames; a plain listener gets pure audio")
    func metadataAndAudio() async throws {
        // Forty 3 s tracks make a 120 s loop, each title once. The four tones recur every four
        // tracks, frame for frame, so the audio alone does not say where a listener joined; its
        // first title does (below).
        var configuration = Self.realtime()
        configuration.titles = (0..<40).map { "\(StationConfiguration.defaultTitles[$0 % 4]) (\($0 / 4 + 1))" }
        // Encoded for these titles: the short program has four tracks, a 12 s loop.
        try await withStation(configuration, program: try await StationProgram.encoding(configuration)) { station in
            let relay = try await RelayServer.start(RelayConfiguration(station: Self.station(station), port: 0), logger: Self.logger)
            let loop = CurlMultiLoop()
            let session = StationSession(station: Self.station(station), loop: loop, options: IngestOptions(),
                                         sinks: [relay.sink], logger: Self.logger)
            session.start()
            try await waitFor("the first packets") { (await relay.status()?.packetsReceived ?? 0) > 40 }

            let icy = try await RelayTestListener.connect(port: relay.port, metadata: true)
            let plain = try await RelayTestListener.connect(port: relay.port)
            // Past two title changes (3 s tracks) and several blocks.
            try await waitFor("7 s of audio at both listeners") { icy.bodyCount > 7 * 16_000 && plain.bodyCount > 7 * 16_000 }
            await icy.close()
            await plain.close()
            session.stop()
            _ = await session.stopped()
            loop.shutdown()
            await relay.shutdown()

            let program = station.program
            // The plain listener: the station's audio from a frame on, nothing inserted.
            let plainBody = plain.received.body
            #expect(plain.received.head?.contains("icy-metaint") == false)
            // The tones recur every four tracks, frame for frame, so a stretch of them fits several
            // places (in the first three passes of the loop: a machine slow enough may join late).
            let passes = 0..<(3 * program.frameOffsets.count)
            #expect(program.offsets(of: plainBody, searchingFrames: passes).contains {
                program.audio(from: $0, count: plainBody.count) == plainBody
            })

            // The ICY listener: its head, then audio identical to the station's with a block every 16000 bytes.
            let head = try #require(icy.received.head)
            #expect(head.hasPrefix("HTTP/1.0 200 OK\r\n"))
            for field in ["Content-Type: audio/mpeg", "icy-metaint: 16000", "icy-name: \(station.configuration.name)",
                          "icy-genre: \(station.configuration.genre)", "icy-br: 128", "icy-url: \(station.configuration.stationURL)"] {
                #expect(head.contains(field + "\r\n") || head.hasSuffix(field), "\(field) missing in \(head)")
            }
            let listening = ICYListening(icy.received.body, metaint: 16000)
            // Titles: the station announced each at a byte; the relay cut at the next frame. A block
            // names the title in effect for the audio byte after it.
            let announced = StationTransmission.render(program: program, metaint: 8000, audioCount: 4 * program.loop.count,
                                                       streamURL: station.streamURL).titles
            let cuts = announced.map { (cut: program.streamOffset(ofFrame: program.frameIndex(atOrAfter: $0.audioOffset)), title: $0.title) }
            func title(at offset: Int) -> String? { cuts.last { $0.cut <= offset }?.title }
            #expect(listening.blocks.count >= 6)
            // Where the ICY listener's audio starts: of the places it fits, the one whose title its
            // first block names. Every block after it is still checked against where titles change.
            let first = try #require(listening.blocks.first)
            let start = try #require(program.offsets(of: listening.audio, searchingFrames: passes).first {
                title(at: $0 + first.afterAudio) == first.title
            })
            #expect(listening.audio == program.audio(from: start, count: listening.audio.count))
            var previous: String?
            var changes = 0
            for (index, block) in listening.blocks.enumerated() {
                let expected = title(at: start + block.afterAudio)
                if index == 0 || expected != previous {
                    #expect(block.title == expected, "block \(index) after \(block.afterAudio) bytes")
                    if index > 0 { changes += 1 }
                } else {
                    #expect(block.title == nil, "block \(index) should say 'no change'")
                }
                previous = expected
            }
            #expect(listening.blocks.first?.title != nil)
            #expect(changes >= 1)
        }
    }

    @Test("Upstream drops and reconnects: the listener's connection stays open and the audio goes on")
    func reconnectIsInvisible() async throws {
        // A live station (each connection joins at the broadcast clock): a reconnect is a gap, and
        // the splice passes it on. (Were each connection to start the program over, its audio
        // would be a repeat of what was heard, and rightly skipped.)
        var configuration = Self.realtime(maxSeconds: 1.5)
        configuration.startAtLive = true
        try await withStation(configuration) { station in
            let relay = try await RelayServer.start(RelayConfiguration(station: Self.station(station), port: 0), logger: Self.logger)
            let loop = CurlMultiLoop()
            let events = CollectingSink()
            let policy = ReconnectPolicy(initialDelay: 0.2, maxDelay: 0.2, jitter: 0, retriesBeforeFirstAudio: false)
            let session = StationSession(station: Self.station(station), loop: loop, options: IngestOptions(reconnect: policy),
                                         sinks: [relay.sink, events], logger: Self.logger)
            session.start()
            let listener = try await RelayTestListener.connect(port: relay.port, keepsBody: false)
            let perConnection = program1_5s(station.program)
            try await waitFor("three upstream connections") { station.connectionsServed >= 3 }
            try await waitFor("audio of the third connection", diagnosis: {
                await Self.diagnosis(relay, [listener]) + "; station served \(station.connectionsServed); states \(events.states.map(\.name))"
            }) { listener.bodyCount > 2 * perConnection }
            #expect(!listener.isClosed)
            let status = try #require(await relay.status())
            #expect(status.listeners == 1)
            #expect(status.listenersServed == 1)
            // The connection's states, in order, as the relay's sink heard them.
            let seen = events.states.map(\.name)
            #expect(Array(seen.prefix(5)) == ["connecting", "streaming", "reconnecting", "connecting", "streaming"], "\(seen)")
            session.stop()
            #expect(await session.stopped() == .userRequest)
            loop.shutdown()
            await listener.close()
            await relay.shutdown()
        }
    }

    private func program1_5s(_ program: StationProgram) -> Int { program.audioByteCount(from: 0, seconds: 1.5) }

    @Test("A listener that stops reading is dropped after the stall timeout; the others get every packet, in order")
    func stalledListener() async throws {
        let program = Programs.short
        let station = Station(id: "fed", name: "Fed", urls: ["http://127.0.0.1:9/unused"])
        // Small ring and short timeouts, so the stall shows within a second or two.
        let configuration = RelayConfiguration(station: station, port: 0, burstSeconds: 0.5, slackSeconds: 1, stallTimeout: 1)
        let relay = try await RelayServer.start(configuration, logger: Self.logger)
        let packets = program.packets(count: 900)
        try relay.sink.receive(.format(packets[0].header))
        try relay.sink.receive(.packet(packets[0]))

        let reader = try await RelayTestListener.connect(port: relay.port)
        let stalled = try await RelayTestListener.connect(port: relay.port, stalled: true)
        try await waitFor("both listeners", diagnosis: { await Self.diagnosis(relay, [reader, stalled]) }) {
            await relay.status()?.listeners == 2
        }
        try await waitFor("the reader's head") { reader.received.head != nil && reader.bodyCount == packets[0].bytes.count }

        // About 23 s of audio, a second at a time (less than the ring's slack): the reader keeps
        // up, the stalled one cannot. Its stall timeout runs on the relay's clock; the wait below
        // is for the drop, however long a loaded machine takes to get there.
        for (index, packet) in packets.enumerated().dropFirst() {
            try relay.sink.receive(.packet(packet))
            if index.isMultiple(of: 40) {
                try await waitFor("the reader to catch up") { reader.bodyCount == packets[index].byteRange.upperBound }
            }
        }
        let sent = packets.last.map(\.byteRange.upperBound) ?? 0
        try await waitFor("the reader to get everything") { reader.bodyCount == sent }
        #expect(reader.received.body == program.audio(from: 0, count: sent))
        try await waitFor("the stalled listener to be dropped") { await relay.status()?.stalledDisconnects == 1 }
        let status = try #require(await relay.status())
        #expect(status.listeners == 1)
        #expect(!reader.isClosed)
        await reader.close()
        await stalled.close()
        await relay.shutdown()
    }

    @Test("Bad requests get 400, unknown paths 404, other methods 405; the stream goes on")
    func badRequests() async throws {
        let station = Station(id: "fed", name: "Fed", urls: ["http://127.0.0.1:9/unused"])
        let relay = try await RelayServer.start(RelayConfiguration(station: station, port: 0), logger: Self.logger)
        let packets = Programs.short.packets(count: 200)
        for packet in packets.prefix(100) { try relay.sink.receive(.packet(packet)) }
        let listener = try await RelayTestListener.connect(port: relay.port)
        try await waitFor("the burst", diagnosis: { await Self.diagnosis(relay, [listener]) }) { listener.bodyCount > 0 }

        let notFound = try await StationClient.fetch(port: relay.port, path: "/nothing")
        #expect(notFound.status == 404)
        let post = try await StationClient.fetch(port: relay.port, path: "/stream", method: "POST")
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD")
        let malformed = try await StationClient.fetch(port: relay.port, path: "/\u{1}\u{2} x y z")
        #expect(malformed.status == 400)
        let oversized = try await StationClient.fetch(port: relay.port, headers: [("X-Padding", String(repeating: "a", count: 40_000))])
        #expect(oversized.status == 400)
        let head = try await StationClient.fetch(port: relay.port, path: "/fed", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Type") == "audio/mpeg")

        for packet in packets.dropFirst(100) { try relay.sink.receive(.packet(packet)) }
        // Whatever part of the first 100 its burst held, the listener ends with all the rest, in order.
        let total = packets.last.map(\.byteRange.upperBound) ?? 0
        let rest = packets.dropFirst(100).reduce(0) { $0 + $1.bytes.count }
        try await waitFor("the rest of the stream") {
            let body = listener.received.body
            return body.count > rest && body == Programs.short.audio(from: total - body.count, count: body.count)
        }
        #expect(!listener.isClosed)
        await listener.close()
        await relay.shutdown()
    }
}
