import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import Glibc
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The ICY relay server: one upstream per station (each fed through its `sink(for:)`), each
/// station at its own mount, any number of HTTP listeners.
///
/// ```swift
/// let server = try await RelayServer.start(RelayConfiguration(station: station, port: 0), logger: logger)
/// // give `server.sink` to the station's session; listeners tune in at http://127.0.0.1:\(server.port)/stream
/// await server.shutdown()
/// ```
/// Everything runs on one event loop of its own: the rings of recent packets, every listener,
/// the counters. Ingest (any thread) only posts into a station's mailbox and wakes that loop.
final class RelayServer: Sendable {
    package let host: String
    /// The port actually bound (the free one chosen when the configuration said 0).
    package let port: Int
    /// The station ids, in the configuration's order: `sink(for:)` takes one.
    package let stationIDs: [String]
    /// The first station's sink: give it to that station's session (beside any other sink).
    package var sink: any StreamSink { ingests[0] }

    private let group: MultiThreadedEventLoopGroup
    private let loop: any EventLoop
    private let serverChannel: any Channel
    private let directory: NIOLoopBound<RelayDirectory>
    private let ingests: [any StreamSink]

    private init(host: String, port: Int, stationIDs: [String], group: MultiThreadedEventLoopGroup, serverChannel: any Channel,
                 directory: NIOLoopBound<RelayDirectory>, ingests: [any StreamSink]) {
        self.host = host
        self.port = port
        self.stationIDs = stationIDs
        self.group = group
        self.loop = serverChannel.eventLoop
        self.serverChannel = serverChannel
        self.directory = directory
        self.ingests = ingests
    }

    /// The sink for the station with this id (nil for an id the server does not serve).
    package func sink(for stationID: String) -> (any StreamSink)? {
        stationIDs.firstIndex(of: stationID).map { ingests[$0] }
    }

    /// Waits until every transcoder has handed its mount all it was given (call it once the
    /// sessions have stopped, before `shutdown`, so nothing is posted to a loop that is gone).
    package func drainTranscoders() {
        for case let queue as QueuedSink in ingests { queue.drain() }
    }

    /// Binds and starts accepting. Throws `.localIO` when the address cannot be bound.
    package static func start(_ configuration: RelayConfiguration, logger: Logger) async throws(AirtapError) -> RelayServer {
        // One thread: a relay of one station is I/O, not CPU, and one loop means no locks
        // between the ring and its readers.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        do {
            let (directory, ingests) = try await loop.submit { makeDirectory(configuration, on: loop, logger: logger) }.get()
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: ConnectionBudget.acceptBacklog)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                // On EMFILE (or any accept error) wait a second before the next accept instead of
                // spinning on a listen socket that stays readable. (The async bind adds this by
                // itself; this future-based one does not.)
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(shouldForwardIOErrorCaught: false))
                    }
                }
                // What a listener may have queued in the process before it counts as blocked.
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 * 1024, high: 64 * 1024))
                // And in the kernel: left to autotuning, a socket whose reader stopped soaks up
                // megabytes (minutes of audio) before the relay can even tell it is stuck.
                .childChannelOption(.socketOption(.so_sndbuf), value: 64 * 1024)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try addConnectionHandlers(to: channel, directory: directory.value, configuration: configuration)
                    }
                }
                .bind(host: configuration.host, port: configuration.port)
                .get()
            guard let port = channel.localAddress?.port else {
                try? await channel.close()
                throw AirtapError.localIO("cannot listen on \(configuration.host):\(configuration.port): no port bound")
            }
            try await loop.submit { directory.value.startTicking(on: loop, bound: directory) }.get()
            return RelayServer(host: configuration.host, port: port, stationIDs: configuration.stations.map(\.id), group: group,
                               serverChannel: channel, directory: directory, ingests: ingests)
        } catch {
            try? await group.shutdownGracefully()
            if let error = error as? AirtapError { throw error }
            throw .localIO(Self.describeListenFailure(error, host: configuration.host, port: configuration.port))
        }
    }

    /// Everything that lives on `loop` (call it there): the directory with a hub per station, and
    /// each station's sink, whose posts wake that station's hub on `loop`. Tests build theirs here
    /// too, on an embedded loop.
    static func makeDirectory(_ configuration: RelayConfiguration, on loop: any EventLoop,
                              logger: Logger) -> (directory: NIOLoopBound<RelayDirectory>, ingests: [any StreamSink]) {
        let mailboxes = configuration.stations.map { _ in
            IngestMailbox(maxPacketBytes: configuration.ringBytes,
                          flushInterval: .milliseconds(Int64(configuration.flushInterval * 1000)))
        }
        let hubs = configuration.stations.enumerated().map { index, station in
            RelayHub(station: station, index: index, configuration: configuration, mailbox: mailboxes[index], logger: logger)
        }
        var shelf: RecordingShelf?
        if let library = configuration.library {
            do {
                shelf = try RecordingShelf(library)
            } catch {
                logger.error("\(error); /recordings is off")
            }
        }
        let directory = NIOLoopBound(RelayDirectory(hubs: hubs, configuration: configuration, shelf: shelf, logger: logger), eventLoop: loop)
        let ingests = mailboxes.indices.map { index -> any StreamSink in
            let relay = RelayIngestSink(mailbox: mailboxes[index]) { due in
                loop.scheduleTask(deadline: due) { directory.value.hubs[index].drainMailbox(at: loop.now) }
            }
            let station = configuration.stations[index]
            guard let setting = station.transcode else { return relay }
            return transcoding(relay, to: setting, station: station, logger: logger)
        }
        return (directory, ingests)
    }

    /// One encoder per mount, shared by every listener: it fills the mount's ring with MP3 in
    /// place of the station's own packets. Off the network loop and the relay's loop (a shared
    /// pool, woken once per network batch), lossless: when it falls behind, only this station's
    /// transfer waits (the queue's back-pressure), so its queue stays bounded.
    private static func transcoding(_ relay: RelayIngestSink, to setting: TranscodeSetting, station: Station,
                                    logger: Logger) -> any StreamSink {
        var logger = logger
        logger[metadataKey: "station"] = "\(station.id)"
        let transcoder = MP3Transcoder(setting, downstream: relay, logger: logger) { source in
            relay.post(.sourceFormat(source))
        }
        return QueuedSink(transcoder, label: "transcode.\(station.id)", target: .global(qos: .utility))
    }

    /// One client connection's pipeline: its bytes are counted, decoded, then handled.
    static func addConnectionHandlers(to channel: any Channel, directory: RelayDirectory,
                                      configuration: RelayConfiguration) throws {
        let requestBytes = RequestSizeLimit(limit: configuration.maxRequestBytes)
        let handlers: [any ChannelHandler] = [
            requestBytes,
            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)),
            RelayConnectionHandler(directory: directory, requestBytes: requestBytes, connectedAt: channel.eventLoop.now),
        ]
        try channel.pipeline.syncOperations.addHandlers(handlers)
    }

    /// What a user can act on when the listening socket cannot be made; never a Swift function or
    /// type name (NIO's IOError describes itself as `bind(descriptor:ptr:bytes:)`).
    static func describeListenFailure(_ error: any Error, host: String, port: Int) -> String {
        let address = "\(host):\(port)"
        guard let ioError = error as? IOError else {
            if error is SocketAddressError { return "cannot listen on \(address): no such local address" }
            return "cannot listen on \(address)"
        }
        switch ioError.errnoCode {
        case EADDRINUSE:
            return "\(address) is already in use; --listen HOST:PORT picks another"
        case EACCES:
            return "cannot listen on \(address): permission denied (ports below 1024 need privileges); --listen HOST:PORT picks another"
        case EADDRNOTAVAIL:
            return "cannot listen on \(address): no such local address"
        default:
            return "cannot listen on \(address): \(errorText(ioError.errnoCode))"
        }
    }

    /// The status of a station (the first when `stationID` is nil).
    package func status(stationID: String? = nil) async -> RelayStatus? {
        let directory = self.directory
        let index = stationID.flatMap { stationIDs.firstIndex(of: $0) } ?? 0
        return try? await loop.submit { directory.value.status(of: index) }.get()
    }

    /// Stops accepting, closes every connection, stops the loop.
    package func shutdown() async {
        let directory = self.directory
        try? await serverChannel.close()
        try? await loop.submit { directory.value.shutdown() }.get()
        try? await group.shutdownGracefully()
    }
}
