import AirtapIngest
import AirtapKit
@testable import AirtapRelay
import AirtapStations
import AirtapTestSupport
import ICYWire
import Logging
import NIOCore
import NIOEmbedded
import Testing

/// The relay's connection handler, directory and hub on `EmbeddedChannel`s: no sockets, and the
/// relay's clock is the embedded loop's, moved only by `advanceTime`, so a timeout can be checked
/// a millisecond before and after it falls, with no sleeps and no margins for a loaded machine.
///
/// The tests are synchronous on purpose: an `EmbeddedEventLoop` may only be used from the thread
/// that made it, and a synchronous test never changes threads.
@Suite("Relay on EmbeddedChannel")
struct RelayEmbeddedTests {
    static let station = Station(id: "fed", name: "Fed", urls: ["http://127.0.0.1:9/unused"])

    /// The tests read the relay's state; its log lines would only repeat it.
    static let logger: Logger = {
        var logger = Logger(label: "relay-embedded-test")
        logger.logLevel = .error
        return logger
    }()

    /// The request and the stall timeout alike.
    static let timeoutSeconds = 10
    static let timeout = TimeAmount.seconds(Int64(timeoutSeconds))

    /// A flush interval of 0 makes a drain due as soon as the sink posts, so `loop.run()` delivers
    /// what a test fed without moving the clock the timeouts are measured on.
    static func configuration(metaint: Int = 16000) -> RelayConfiguration {
        RelayConfiguration(station: station, metaint: metaint, stallTimeout: Double(timeoutSeconds),
                           requestTimeout: Double(timeoutSeconds), flushInterval: 0)
    }

    static let streamRequest = "GET /stream HTTP/1.0\r\nHost: relay\r\nUser-Agent: airtap-test\r\n\r\n"

    @Test("A connection that never completes its request is closed once the request timeout has passed, not before")
    func requestTimeout() throws {
        try withEmbeddedRelay(Self.configuration()) { relay in
            let connectedAt = relay.loop.now
            let (channel, handler) = try relay.connect()
            // Half a request (no blank line yet) is still no request: the decoder has no head to hand on.
            try channel.writeInbound(ByteBuffer(string: "GET /stream HTTP/1.0\r\nHost: relay\r\n"))

            relay.loop.advanceTime(to: connectedAt + Self.timeout - .milliseconds(1))
            #expect(channel.isActive)
            #expect(handler.stopReason == nil)

            // The check that falls exactly on the timeout takes it (a timeout is reached at, not after).
            relay.loop.advanceTime(to: connectedAt + Self.timeout)
            #expect(!channel.isActive)
            #expect(handler.stopReason == .requestTimeout)
            let status = relay.directory.value.status(of: 0)
            #expect(status.closedBeforeRequest == 1)
            #expect(status.lastCloseBeforeRequest?.hasPrefix("no request in time") == true, "\(status)")
        }
    }

    @Test("A listener whose channel stays unwritable past the stall timeout is dropped, not before")
    func stalledListenerIsDropped() throws {
        try withEmbeddedRelay(Self.configuration()) { relay in
            try relay.feed(Programs.short.packets(count: 20))
            let (channel, handler) = try relay.connect()
            try channel.writeInbound(ByteBuffer(string: Self.streamRequest))
            #expect(try channel.writtenBytes().starts(with: Array("HTTP/1.0 200 OK\r\n".utf8)))

            // Two seconds in, so a stall counted from the connection instead of the blocking would show.
            relay.loop.advanceTime(by: .seconds(2))
            let blockedAt = relay.loop.now
            channel.becomeWritable(false)

            relay.loop.advanceTime(to: blockedAt + Self.timeout - .milliseconds(1))
            #expect(channel.isActive)
            #expect(handler.isStreaming)

            // The check that falls exactly on the timeout takes it (a timeout is reached at, not after).
            relay.loop.advanceTime(to: blockedAt + Self.timeout)
            #expect(!channel.isActive)
            #expect(handler.stopReason == .stalled(seconds: Self.timeoutSeconds))
            let status = relay.directory.value.status(of: 0)
            #expect(status.stalledDisconnects == 1)
            #expect(status.listeners == 0)
        }
    }

    @Test("A listener whose channel is writable again before the stall timeout stays, and gets what arrived meanwhile")
    func listenerThatRecoversStays() throws {
        let packets = Programs.short.packets(count: 40)
        try withEmbeddedRelay(Self.configuration()) { relay in
            try relay.feed(packets.prefix(20))
            let (channel, handler) = try relay.connect()
            try channel.writeInbound(ByteBuffer(string: Self.streamRequest))
            _ = try channel.writtenBytes()

            relay.loop.advanceTime(by: .seconds(2))
            let blockedAt = relay.loop.now
            channel.becomeWritable(false)
            try relay.feed(packets.dropFirst(20))
            #expect(try channel.writtenBytes().isEmpty, "written to a channel that was not writable")

            relay.loop.advanceTime(to: blockedAt + Self.timeout - .milliseconds(1))
            channel.becomeWritable(true)
            let resumed = try channel.writtenBytes()
            let arrivedWhileBlocked = Array(packets.dropFirst(20).map(\.bytes).joined())
            let resumedWithWhatArrived = resumed == arrivedWhileBlocked
            #expect(resumedWithWhatArrived, "wrote \(resumed.count) bytes; \(arrivedWhileBlocked.count) arrived while blocked")

            relay.loop.advanceTime(to: blockedAt + Self.timeout * 3)
            #expect(channel.isActive)
            #expect(handler.isStreaming)
            let status = relay.directory.value.status(of: 0)
            #expect(status.stalledDisconnects == 0)
            #expect(status.listeners == 1)
        }
    }

    @Test("A listener that asks for metadata gets the title current when it joined in its first block")
    func metadataListenerGetsCurrentTitleFirst() throws {
        let packets = Programs.short.packets(count: 10)
        let metaint = 1000
        try withEmbeddedRelay(Self.configuration(metaint: metaint)) { relay in
            try relay.sink.receive(.format(packets[0].header))
            let title = TrackChange(info: TrackInfo(streamTitle: "Artist - Song"), position: 0, source: .icy)
            try relay.sink.receive(.metadata(title))
            try relay.feed(packets[...])
            let (channel, _) = try relay.connect()
            try channel.writeInbound(ByteBuffer(string: "GET /stream HTTP/1.0\r\nHost: relay\r\nIcy-MetaData: 1\r\n\r\n"))

            let written = try channel.writtenBytes()
            let separator = Array("\r\n\r\n".utf8)
            let headEnd = try #require(written.indices.first { written[$0...].starts(with: separator) })
            let head = String(decoding: written[..<headEnd], as: UTF8.self)
            #expect(head.contains("\r\nicy-metaint: \(metaint)"), "\(head)")
            let listening = ICYListening(Array(written[(headEnd + separator.count)...]), metaint: metaint)
            let audio = Array(packets.map(\.bytes).joined())
            let audioIsTheStation = listening.audio == audio
            #expect(audioIsTheStation, "\(listening.audio.count) audio bytes, \(audio.count) fed")
            // A block goes out before the audio after it, so none follows the last byte.
            let blocks = listening.blocks
            #expect(blocks.map { $0.afterAudio } == Array(stride(from: metaint, to: audio.count, by: metaint)))
            // The title is named once, in the first block; the later ones say "no change".
            #expect(blocks.first?.title == "Artist - Song")
            #expect(blocks.dropFirst().allSatisfy { $0.title == nil })
        }
    }

    @Test("Shutdown closes every connection, a pending one and a listener waiting for audio, each for that reason")
    func shutdownClosesEveryConnection() throws {
        try withEmbeddedRelay(Self.configuration()) { relay in
            let (pending, pendingHandler) = try relay.connect()
            // No audio yet: the listener waits for its head.
            let (waiting, waitingHandler) = try relay.connect()
            try waiting.writeInbound(ByteBuffer(string: Self.streamRequest))
            #expect(waiting.isActive && waitingHandler.stopReason == nil)
            #expect(relay.directory.value.status(of: 0).listeners == 1)

            relay.directory.value.shutdown()
            #expect(!pending.isActive && !waiting.isActive)
            #expect(pendingHandler.stopReason == .serverShutdown)
            #expect(waitingHandler.stopReason == .serverShutdown)
            #expect(relay.directory.value.status(of: 0).listeners == 0)
        }
    }
}

/// A relay as `RelayServer.start` builds it (`makeDirectory`, `addConnectionHandlers`, the
/// deadline tick), on an embedded loop instead of a thread of its own.
struct EmbeddedRelay {
    let loop = EmbeddedEventLoop()
    let configuration: RelayConfiguration
    let directory: NIOLoopBound<RelayDirectory>
    let sink: any StreamSink

    init(_ configuration: RelayConfiguration) {
        self.configuration = configuration
        let (directory, ingests) = RelayServer.makeDirectory(configuration, on: loop, logger: RelayEmbeddedTests.logger)
        self.directory = directory
        self.sink = ingests[0]
        directory.value.startTicking(on: loop, bound: directory)
    }

    /// A client connection, set up as the server's child channel initializer sets up each one.
    func connect() throws -> (EmbeddedChannel, RelayConnectionHandler) {
        let channel = EmbeddedChannel(loop: loop)
        try RelayServer.addConnectionHandlers(to: channel, directory: directory.value, configuration: configuration)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 40000)).wait()
        return (channel, try channel.pipeline.syncOperations.handler(type: RelayConnectionHandler.self))
    }

    /// Hands packets to the station's sink, then runs the drain they scheduled on the loop.
    func feed(_ packets: some Sequence<Packet>) throws {
        for packet in packets { try sink.receive(.packet(packet)) }
        loop.run()
    }

    /// Closes every connection and stops the tick. An embedded loop freed with a task still
    /// scheduled, or a channel still open, stops the whole test process, so this runs however a
    /// test ends.
    func shutDown() {
        directory.value.shutdown()
        // Never fails: an embedded loop's shutdown runs what is due and cancels the rest.
        try? loop.syncShutdownGracefully()
    }
}

func withEmbeddedRelay(_ configuration: RelayConfiguration, _ body: (EmbeddedRelay) throws -> Void) throws {
    let relay = EmbeddedRelay(configuration)
    defer { relay.shutDown() }
    try body(relay)
}

extension EmbeddedChannel {
    /// What the handlers wrote and flushed since the last call, as bytes.
    func writtenBytes() throws -> [UInt8] {
        var bytes: [UInt8] = []
        while let buffer = try readOutbound(as: ByteBuffer.self) { bytes += buffer.readableBytesView }
        return bytes
    }

    /// An `EmbeddedChannel` has no socket buffer: it ignores `ChannelOptions.writeBufferWaterMark`
    /// (the option is only recorded) and takes every write at once, so it never turns unwritable
    /// by itself. Its `isWritable` is a plain property instead; setting it and firing the event
    /// is what NIO's real channel does when its buffer crosses a watermark.
    func becomeWritable(_ writable: Bool) {
        isWritable = writable
        pipeline.syncOperations.fireChannelWritabilityChanged()
    }
}
