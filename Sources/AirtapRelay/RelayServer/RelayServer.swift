import AirtapKit
import Glibc
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The ICY relay server: one upstream (fed through `sink`), any number of HTTP listeners.
///
/// ```swift
/// let server = try await RelayServer.start(RelayConfiguration(station: station, port: 0), logger: logger)
/// // give `server.sink` to the station's session; listeners tune in at http://127.0.0.1:\(server.port)/stream
/// await server.shutdown()
/// ```
/// Everything runs on one event loop of its own: the ring of recent packets, every listener,
/// the counters. Ingest (any thread) only posts into a mailbox and wakes that loop.
public final class RelayServer: Sendable {
    public let host: String
    /// The port actually bound (the free one chosen when the configuration said 0).
    public let port: Int
    /// Give this to the station's session (beside any other sink).
    public let sink: any StreamSink

    private let group: MultiThreadedEventLoopGroup
    private let loop: any EventLoop
    private let serverChannel: any Channel
    private let hub: NIOLoopBound<RelayHub>
    private let ingest: RelayIngestSink

    private init(host: String, port: Int, group: MultiThreadedEventLoopGroup, serverChannel: any Channel,
                 hub: NIOLoopBound<RelayHub>, ingest: RelayIngestSink) {
        self.host = host
        self.port = port
        self.group = group
        self.loop = serverChannel.eventLoop
        self.serverChannel = serverChannel
        self.hub = hub
        self.ingest = ingest
        self.sink = ingest
    }

    /// Binds and starts accepting. Throws `.localIO` when the address cannot be bound.
    public static func start(_ configuration: RelayConfiguration, logger: Logger) async throws(AirtapError) -> RelayServer {
        // One thread: a relay of one station is I/O, not CPU, and one loop means no locks
        // between the ring and its readers.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let mailbox = IngestMailbox(maxPacketBytes: configuration.ringBytes,
                                    flushInterval: .milliseconds(Int64(configuration.flushInterval * 1000)))
        do {
            let hub = try await loop.submit {
                NIOLoopBound(RelayHub(configuration: configuration, mailbox: mailbox, logger: logger), eventLoop: loop)
            }.get()
            let ingest = RelayIngestSink(mailbox: mailbox) { due in
                loop.scheduleTask(deadline: due) { hub.value.drainMailbox() }
            }
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 512)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                // What a listener may have queued in the process before it counts as blocked.
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 * 1024, high: 64 * 1024))
                // And in the kernel: left to autotuning, a socket whose reader stopped soaks up
                // megabytes (minutes of audio) before the relay can even tell it is stuck.
                .childChannelOption(.socketOption(.so_sndbuf), value: 64 * 1024)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let requestBytes = RequestSizeLimit(limit: configuration.maxRequestBytes)
                        let handlers: [any ChannelHandler] = [
                            requestBytes,
                            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)),
                            RelayConnectionHandler(hub: hub.value, requestBytes: requestBytes),
                        ]
                        try channel.pipeline.syncOperations.addHandlers(handlers)
                    }
                }
                .bind(host: configuration.host, port: configuration.port)
                .get()
            guard let port = channel.localAddress?.port else {
                try? await channel.close()
                throw AirtapError.localIO("cannot listen on \(configuration.host):\(configuration.port): no port bound")
            }
            try await loop.submit { hub.value.startTicking(on: loop, bound: hub) }.get()
            return RelayServer(host: configuration.host, port: port, group: group, serverChannel: channel, hub: hub, ingest: ingest)
        } catch {
            try? await group.shutdownGracefully()
            if let error = error as? AirtapError { throw error }
            throw .localIO(Self.describeListenFailure(error, host: configuration.host, port: configuration.port))
        }
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
            return "cannot listen on \(address): \(String(cString: strerror(ioError.errnoCode)))"
        }
    }

    /// The upstream session's news (connecting, reconnecting), in order with the stream's events:
    /// pass it as the session's `onStateChange`.
    public func upstreamChanged(_ state: ConnectionState) {
        ingest.post(.upstream(state))
    }

    public func status() async -> RelayStatus? {
        let hub = self.hub
        return try? await loop.submit { hub.value.status }.get()
    }

    /// Stops accepting, closes every connection, stops the loop.
    public func shutdown() async {
        let hub = self.hub
        try? await serverChannel.close()
        try? await loop.submit { hub.value.shutdown() }.get()
        try? await group.shutdownGracefully()
    }
}
