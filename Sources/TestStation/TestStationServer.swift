import Dispatch
import NIOCore
import NIOHTTP1
import NIOPosix
import Locking

/// What the station did for one connection: enough to re-render its bytes with
/// `StationTransmission.render(program:startOffset:metaint:audioCount:streamURL:)`.
struct ConnectionRecord: Sendable, Hashable {
    /// 1, 2, 3... in the order connections were accepted.
    package let id: Int
    package var method: String = ""
    package var uri: String = ""
    package var status: Int?
    /// Whether the request carried `Icy-MetaData: 1`.
    package var wantsMetadata = false
    /// For streams: the stream offset of the first audio byte.
    package var startOffset: Int?
    /// For streams with metadata.
    package var metaint: Int?
    /// Audio bytes the stream was limited to (`maxSeconds`), if any.
    package var audioLimit: Int?
    /// Audio bytes handed to the socket so far (metadata and head not counted).
    package var audioBytesSent = 0
    /// Every byte handed to the socket, head included.
    package var bytesSent = 0
    /// Everything is written; the connection closes once the socket has taken it.
    package var isFinishing = false
    package var isClosed = false

    package init(id: Int) { self.id = id }
}

/// The synthetic ICY station, on SwiftNIO, listening on 127.0.0.1.
///
/// ```swift
/// let server = try await TestStationServer.start(StationConfiguration(pace: .fast, maxSeconds: 5))
/// let url = server.streamURL    // http://127.0.0.1:PORT/stream
/// ...
/// try await server.stop()
/// ```
package final class TestStationServer: Sendable {
    package let configuration: StationConfiguration
    package let program: StationProgram
    /// The port actually bound (the free one chosen when the configuration said 0).
    package let port: Int
    private let serverChannel: Channel
    private let station: StationState

    private init(configuration: StationConfiguration, program: StationProgram, port: Int, serverChannel: Channel, station: StationState) {
        self.configuration = configuration
        self.program = program
        self.port = port
        self.serverChannel = serverChannel
        self.station = station
    }

    /// Encodes the program (unless one is given: tests share one to save the encoding time) on a
    /// thread of its own, binds and starts accepting. `log` receives one line per connection
    /// event, on an event loop.
    package static func start(
        _ configuration: StationConfiguration = StationConfiguration(),
        program: StationProgram? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        hls: HLSSite? = nil,
        log: (@Sendable (String) -> Void)? = nil
    ) async throws -> TestStationServer {
        try configuration.validate()
        let encoded: StationProgram
        if let program { encoded = program } else { encoded = try await StationProgram.encoding(configuration) }
        let program = encoded
        let station = StationState(configuration: configuration, program: program, hls: hls, log: log)
        let channel = try await ServerBootstrap(group: eventLoopGroup)
            // Benchmarks open hundreds of connections at once.
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let id = station.accepted(channel)
                    channel.closeFuture.whenComplete { _ in station.closed(id) }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
                    try channel.pipeline.syncOperations.addHandler(StationHandler(station: station, id: id))
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw StationError.invalidConfiguration("the listening socket has no port")
        }
        return TestStationServer(
            configuration: configuration, program: program, port: port, serverChannel: channel, station: station)
    }

    /// Stops accepting and closes every open connection.
    package func stop() async throws {
        do {
            try await serverChannel.close()
        } catch ChannelError.alreadyClosed {
            // stop() twice is harmless.
        }
        for channel in station.openChannels() {
            try? await channel.close()
            // The close's promise can be kept before the close future's callbacks ran: waiting for
            // that future too means the book-keeping registered at accept (callbacks run in
            // order) has counted the connection closed when stop() returns.
            try? await channel.closeFuture.get()
        }
    }

    package var streamURL: String { "http://\(configuration.host):\(port)/stream" }
    package func url(path: String) -> String { "http://\(configuration.host):\(port)\(path)" }

    /// Connections accepted since start.
    package var connectionsServed: Int { station.counters().served }
    /// Connections open now.
    package var openConnections: Int { station.counters().open }
    /// Ends a stall configured with `Stall.untilResumed`: audio goes on at the nominal rate from now.
    package func resumeStall() { station.resumeStall() }

    /// The most recent connections (up to 4096), oldest first.
    var connections: [ConnectionRecord] { station.records() }
    /// The record of connection `id`, while it is among the recent ones.
    func connection(_ id: Int) -> ConnectionRecord? { station.records().first { $0.id == id } }

    /// Where a client connecting now would start with `startAtLive` (frame-aligned).
    package var liveOffset: Int { station.liveOffset(at: .now()) }
}

/// State shared by the server's connections (they run on several event loops).
final class StationState: Sendable {
    let configuration: StationConfiguration
    let program: StationProgram
    /// The shared broadcast clock for `startAtLive`.
    let clockStart: NIODeadline
    /// What the station serves under `/hls/`, if anything.
    let hls: HLSSite?
    let log: (@Sendable (String) -> Void)?

    private struct Book {
        var nextID = 1
        var served = 0
        var open: [Int: Channel] = [:]
        /// Oldest first, capped so a long-running station does not grow without bound.
        var records: [ConnectionRecord] = []
    }
    private static let recordLimit = 4096
    private let book = Locked(Book())
    /// When a stall held until resumed was resumed.
    private let resumed = Locked<NIODeadline?>(nil)

    init(configuration: StationConfiguration, program: StationProgram, hls: HLSSite?, log: (@Sendable (String) -> Void)?) {
        self.configuration = configuration
        self.program = program
        self.hls = hls
        self.clockStart = .now()
        self.log = log
    }

    func accepted(_ channel: Channel) -> Int {
        book.withLock { book in
            let id = book.nextID
            book.nextID += 1
            book.served += 1
            book.open[id] = channel
            book.records.append(ConnectionRecord(id: id))
            if book.records.count > Self.recordLimit { book.records.removeFirst(book.records.count - Self.recordLimit) }
            return id
        }
    }

    func closed(_ id: Int) {
        book.withLock { _ = $0.open.removeValue(forKey: id) }
    }

    func update(_ id: Int, _ change: (inout ConnectionRecord) -> Void) {
        book.withLock { book in
            // Records are in id order, so the one we want is near the end.
            if let index = book.records.lastIndex(where: { $0.id == id }) { change(&book.records[index]) }
        }
    }

    func resumeStall() { resumed.withLock { $0 = $0 ?? .now() } }
    /// When a stall held until resumed was resumed; nil, without taking the lock, for any other
    /// stall (asked on every tick of every connection).
    func stallResumed() -> NIODeadline? {
        guard configuration.stall?.isHeld == true else { return nil }
        return resumed.withLock { $0 }
    }

    func openChannels() -> [Channel] { book.withLock { Array($0.open.values) } }
    func counters() -> (served: Int, open: Int) { book.withLock { ($0.served, $0.open.count) } }
    func records() -> [ConnectionRecord] { book.withLock { $0.records } }

    func liveOffset(at now: NIODeadline) -> Int {
        program.liveOffset(elapsedSeconds: elapsedSeconds(at: now))
    }

    func elapsedSeconds(at now: NIODeadline) -> Double {
        Double((now - clockStart).nanoseconds) / 1e9
    }
}

/// One connection: reads the request head, answers it, then feeds the stream at the configured pace.
final class StationHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private enum State {
        case awaitingRequest
        case streaming(StationTransmission)
        /// The answer is written; the connection closes once it is flushed.
        case finishing
        case closed
    }

    /// Realtime pacing: how often a connection wakes up to send what is due.
    private static let tickInterval = TimeAmount.milliseconds(100)
    /// Fast pacing: bytes per write, and writes per event-loop turn before yielding to other connections.
    private static let fastChunk = 16 * 1024
    private static let fastWritesPerTurn = 16

    private let station: StationState
    private let id: Int
    private var state = State.awaitingRequest
    private var streamStarted = NIODeadline.now()
    private var tick: Scheduled<Void>?
    private var fastTurnScheduled = false
    private var bytesSent = 0
    private var audioSent = 0

    init(station: StationState, id: Int) {
        self.station = station
        self.id = id
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Only the first request head matters: the connection closes after its answer.
        guard case .awaitingRequest = state, case let .head(head) = unwrapInboundIn(data) else { return }
        let route = StationRoute(method: head.method, uri: head.uri)
        let wantsMetadata = head.headers["Icy-MetaData"].contains { $0.trimmingSpaces == "1" }
        station.update(id) { record in
            record.method = head.method.rawValue
            record.uri = head.uri
            record.wantsMetadata = wantsMetadata
        }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? head.uri
        if head.method == .GET || head.method == .HEAD,
           let response = station.hls?.response(path: path, elapsedSeconds: station.elapsedSeconds(at: .now())) {
            answerHLS(context: context, response: response, includeBody: head.method != .HEAD)
        } else if route == .stream {
            startStream(context: context, includeBody: head.method != .HEAD, wantsMetadata: wantsMetadata)
        } else {
            answerDocument(context: context, route: route, includeBody: head.method != .HEAD)
        }
    }

    private func answerDocument(context: ChannelHandlerContext, route: StationRoute, includeBody: Bool) {
        let port = context.channel.localAddress?.port ?? station.configuration.port
        let text = StationResponses.response(
            for: route, configuration: station.configuration, port: port, includeBody: includeBody)
        let status: Int
        switch route {
        case let .status(code): status = code
        case .notFound: status = 404
        case .methodNotAllowed: status = 405
        default: status = 200
        }
        station.update(id) { $0.status = status }
        station.log?("#\(id) \(remote(context)) \(status)")
        write(context: context, string: text)
        finish(context: context)
    }

    private func answerHLS(context: ChannelHandlerContext, response: HLSSite.Response, includeBody: Bool) {
        let head = [
            "HTTP/1.0 \(response.status) \(StationResponses.reason(response.status))",
            "Content-Type: \(response.contentType)",
            "Content-Length: \(response.body.count)",
            "Server: airtap-teststation",
            "Cache-Control: no-cache",
            "Connection: close",
        ].joined(separator: "\r\n") + "\r\n\r\n"
        station.update(id) { $0.status = response.status }
        station.log?("#\(id) \(remote(context)) \(response.status)")
        write(context: context, string: head)
        if includeBody {
            let buffer = context.channel.allocator.buffer(bytes: response.body)
            bytesSent += buffer.readableBytes
            context.write(wrapOutboundOut(buffer), promise: nil)
        }
        finish(context: context)
    }

    private func startStream(context: ChannelHandlerContext, includeBody: Bool, wantsMetadata: Bool) {
        let configuration = station.configuration
        let program = station.program
        // Icecast never interleaves ICY metadata into Ogg: titles travel in the links.
        let metaint = wantsMetadata && !configuration.codec.isOgg ? configuration.metaint : nil
        write(context: context, string: StationResponses.streamHead(configuration: configuration, metaint: metaint))
        station.update(id) { $0.status = 200 }
        guard includeBody else {
            station.log?("#\(id) \(remote(context)) HEAD stream")
            finish(context: context)
            return
        }

        let live = configuration.pace == .realtime && configuration.startAtLive
        var startOffset = live ? station.liveOffset(at: .now()) : 0
        if configuration.codec.isOgg {
            // A listener needs the link's headers first: start it at the current link's BOS page
            // (Icecast instead sends the headers, then audio from the live page; close enough here).
            let (round, _) = startOffset.quotientAndRemainder(dividingBy: program.loop.count)
            startOffset = round * program.loop.count + program.track(atStreamOffset: startOffset).startOffset
        }
        let audioLimit = configuration.maxSeconds.map { program.audioByteCount(from: startOffset, seconds: $0) }
        station.update(id) { record in
            record.startOffset = startOffset
            record.metaint = metaint
            record.audioLimit = audioLimit
        }
        station.log?(
            "#\(id) \(remote(context)) stream from \(startOffset)\(metaint.map { " metaint \($0)" } ?? "")")
        state = .streaming(StationTransmission(
            program: program, startOffset: startOffset, metaint: metaint, audioLimit: audioLimit,
            streamURL: configuration.stationURL, metaOffset: configuration.metaOffsetBytes,
            hostileTitles: configuration.hostileTitles))
        streamStarted = .now()

        switch configuration.pace {
        case .realtime: realtimeTick(context: context)
        case .fast: fastTurn(context: context)
        }
    }

    // MARK: Realtime

    /// Sends what the nominal bitrate makes due since the stream started: computed from elapsed
    /// time rather than counted per tick, so late ticks do not make the stream drift.
    private func realtimeTick(context: ChannelHandlerContext) {
        guard case var .streaming(transmission) = state else { return }
        let elapsedMicroseconds = Int((NIODeadline.now() - streamStarted).nanoseconds / 1000)
        let bytesPerSecond = station.program.bytesPerSecond
        let resumedAfter = station.stallResumed().map {
            Int(max(0, ($0 - streamStarted).nanoseconds / 1000)) * bytesPerSecond / 1_000_000
        }
        let due = station.configuration.stall.dueBytes(
            elapsedMicroseconds * bytesPerSecond / 1_000_000, bytesPerSecond: bytesPerSecond,
            resumedAfter: resumedAfter)
        // A client that stopped reading gets nothing more until its socket drains, and then at
        // most two seconds per tick: back-pressure, not an unbounded outbound buffer.
        let allowance = min(due - transmission.audioSent, 2 * bytesPerSecond)
        if allowance > 0, context.channel.isWritable {
            writeAudio(context: context, transmission: &transmission, maxAudioBytes: allowance)
            context.flush()
        }
        state = .streaming(transmission)
        if transmission.isFinished {
            finish(context: context)
        } else {
            tick = context.eventLoop.assumeIsolated().scheduleTask(in: Self.tickInterval) { [self] in
                realtimeTick(context: context)
            }
        }
    }

    // MARK: Fast

    /// Writes until the channel stops being writable (resumed by `channelWritabilityChanged`), or
    /// for a bounded number of writes, then yields the event loop so other connections get a turn.
    private func fastTurn(context: ChannelHandlerContext) {
        fastTurnScheduled = false
        guard case var .streaming(transmission) = state else { return }
        var writes = 0
        while context.channel.isWritable, !transmission.isFinished, writes < Self.fastWritesPerTurn {
            writeAudio(context: context, transmission: &transmission, maxAudioBytes: Self.fastChunk)
            writes += 1
        }
        state = .streaming(transmission)
        context.flush()
        if transmission.isFinished {
            finish(context: context)
        } else if context.channel.isWritable {
            scheduleFastTurn(context: context)
        }
    }

    private func scheduleFastTurn(context: ChannelHandlerContext) {
        guard !fastTurnScheduled else { return }
        fastTurnScheduled = true
        context.eventLoop.assumeIsolated().execute { [self] in fastTurn(context: context) }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if station.configuration.pace == .fast, context.channel.isWritable, case .streaming = state {
            scheduleFastTurn(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    // MARK: Writing and closing

    private func writeAudio(context: ChannelHandlerContext, transmission: inout StationTransmission, maxAudioBytes: Int) {
        // Room for the audio plus the metadata blocks that may fall inside it.
        var buffer = context.channel.allocator.buffer(capacity: maxAudioBytes + 4096)
        transmission.next(maxAudioBytes: maxAudioBytes) { chunk in
            switch chunk {
            case let .audio(bytes): buffer.writeBytes(bytes)
            case let .metadata(block, _): buffer.writeBytes(block)
            }
        }
        bytesSent += buffer.readableBytes
        audioSent = transmission.audioSent
        let (bytesSent, audioSent) = (bytesSent, audioSent)
        // Kept current while streaming, so a test that sees a stall can tell whose it was.
        station.update(id) { record in
            record.bytesSent = bytesSent
            record.audioBytesSent = audioSent
        }
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    private func write(context: ChannelHandlerContext, string: String) {
        let buffer = context.channel.allocator.buffer(string: string)
        bytesSent += buffer.readableBytes
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    /// Closes once everything written so far is out: writes complete in order, so the empty
    /// write's completion means all earlier ones have gone to the socket.
    private func finish(context: ChannelHandlerContext) {
        if case .closed = state { return }
        state = .finishing
        station.update(id) { $0.isFinishing = true }
        let empty = context.channel.allocator.buffer(capacity: 0)
        context.writeAndFlush(wrapOutboundOut(empty)).assumeIsolated().whenComplete { _ in
            context.closeSendingFIN()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        tick?.cancel()
        tick = nil
        state = .closed
        let (bytesSent, audioSent) = (bytesSent, audioSent)
        station.update(id) { record in
            record.bytesSent = bytesSent
            record.audioBytesSent = audioSent
            record.isClosed = true
        }
        station.log?("#\(id) closed after \(bytesSent) bytes")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed request or a reset by the client: nothing to answer, just let go.
        context.close(promise: nil)
    }

    private func remote(_ context: ChannelHandlerContext) -> String {
        context.channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
    }
}

extension String {
    var trimmingSpaces: Substring {
        let scalars = unicodeScalars
        let start = scalars.firstIndex { $0 != " " && $0 != "\t" } ?? scalars.endIndex
        let end = scalars.lastIndex { $0 != " " && $0 != "\t" }.map { scalars.index(after: $0) } ?? start
        return Substring(scalars[start..<max(start, end)])
    }
}
