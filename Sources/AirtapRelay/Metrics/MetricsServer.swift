import AirtapKit
import AirtapSupport
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// `record --metrics-listen HOST:PORT`: a tiny HTTP server whose one page is `/metrics`, rendered
/// on each request by `render` (from the recorders' own counters). One event loop, one request
/// per connection. It holds its connections to the relay's bounds (`ConnectionTable`): a cap from
/// the descriptors the recordings leave, the oldest idle connection closed for a newer one, and a
/// connection that sends no request within `requestTimeout` closed, so no number of idle clients
/// can take the descriptors a recording needs.
final class MetricsServer: Sendable {
    package let host: String
    package let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let connections: NIOLoopBound<MetricsConnections>

    private init(host: String, port: Int, group: MultiThreadedEventLoopGroup, channel: any Channel,
                 connections: NIOLoopBound<MetricsConnections>) {
        self.host = host
        self.port = port
        self.group = group
        self.channel = channel
        self.connections = connections
    }

    /// A scraper needs one connection at a time: this leaves room for several, and for people with curl.
    package static let connectionCeiling = 64

    /// The budget for a process recording `stations` stations: what the descriptor limit leaves
    /// after the recordings' reserve, and never more than `connectionCeiling`.
    package static func budget(stations: Int) -> ConnectionBudget {
        ConnectionBudget(descriptorLimit: DescriptorLimit.current, reserve: ConnectionBudget.descriptorReserve(stations: stations),
                         ceiling: connectionCeiling)
    }

    package static func start(host: String, port: Int, budget: ConnectionBudget, requestTimeout: Double = 10,
                              render: @escaping @Sendable () -> String) async throws(AirtapError) -> MetricsServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        // Nothing streams here, so only the request timeout ever applies.
        let limits = ListenerLimits(requestTimeout: .milliseconds(Int64(requestTimeout * 1000)), stallTimeout: .seconds(10))
        do {
            let connections = try await loop.submit {
                NIOLoopBound(MetricsConnections(table: ConnectionTable(budget: budget), limits: limits), eventLoop: loop)
            }.get()
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: ConnectionBudget.acceptBacklog)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                // An accept error (EMFILE) waits a second before the next accept, as the relay's
                // does: the listen socket stays readable, and the server stays up.
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(shouldForwardIOErrorCaught: false))
                    }
                }
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            RequestSizeLimit(limit: 16 * 1024),
                            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)),
                            MetricsHandler(connections: connections.value, connectedAt: channel.eventLoop.now, render: render),
                        ])
                    }
                }
                .bind(host: host, port: port)
                .get()
            try await loop.submit { connections.value.startTicking(on: loop, bound: connections) }.get()
            let bound = channel.localAddress?.port ?? port
            return MetricsServer(host: host, port: bound, group: group, channel: channel, connections: connections)
        } catch {
            try? await group.shutdownGracefully()
            throw .localIO("cannot listen on \(host):\(port) for metrics: \(error)")
        }
    }

    package func shutdown() async {
        let connections = self.connections
        try? await channel.close()
        try? await channel.eventLoop.submit { connections.value.shutdown() }.get()
        try? await group.shutdownGracefully()
    }
}

/// The metrics server's connections, on its loop: admitted within the budget, timed out once a second.
private final class MetricsConnections {
    private let table: ConnectionTable<MetricsHandler>
    private let limits: ListenerLimits
    private var tick: RepeatedTask?

    init(table: ConnectionTable<MetricsHandler>, limits: ListenerLimits) {
        self.table = table
        self.limits = limits
    }

    func startTicking(on loop: any EventLoop, bound: NIOLoopBound<MetricsConnections>) {
        tick = loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            bound.value.table.closeExpired(at: loop.now, limits: bound.value.limits) { _, _, _ in }
        }
    }

    func admit(_ connection: MetricsHandler) -> Int? { table.admit(connection) }

    func remove(_ id: Int) { table.remove(id) }

    func shutdown() {
        tick?.cancel()
        tick = nil
        table.closeAll(.serverShutdown)
    }
}

/// Answers one request: `/metrics` (GET or HEAD), 404 for any other path, 405 for other methods.
private final class MetricsHandler: ChannelInboundHandler, HeldConnection {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private let connections: MetricsConnections
    private let render: @Sendable () -> String
    private var machine: ListenerStateMachine
    private var id: Int?
    private var context: ChannelHandlerContext?

    init(connections: MetricsConnections, connectedAt: NIODeadline, render: @escaping @Sendable () -> String) {
        self.connections = connections
        self.render = render
        self.machine = ListenerStateMachine(connectedAt: connectedAt)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        guard let id = connections.admit(self) else {
            perform(machine.stop(.failed("refused: too many connections")))
            return
        }
        self.id = id
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard machine.isAwaitingRequest, case .head(let head) = unwrapInboundIn(data) else { return }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? head.uri
        let text: String
        let status: Int
        if head.method != .GET && head.method != .HEAD {
            (text, status) = (RelayResponses.text(.methodNotAllowed, "405 method not allowed", extraHeaders: ["Allow: GET, HEAD"]), 405)
        } else if path == "/metrics" {
            text = RelayResponses.document(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: render(),
                                           includeBody: head.method == .GET)
            status = 200
        } else {
            text = RelayResponses.text(.notFound, "404 not found: the metrics are at /metrics", includeBody: head.method == .GET)
            status = 404
        }
        guard machine.answered(status: status) == .answer else { return }
        // A client that never reads the page would hold its slot for good, the write never done.
        context.eventLoop.assumeIsolated().scheduleTask(in: RelayConnectionHandler.answerLimit) { context.close(promise: nil) }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        perform(machine.closed())
        self.context = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        perform(machine.stop(.failed("\(error)")))
    }

    var isAwaitingRequest: Bool { machine.isAwaitingRequest }

    func stop(_ reason: ListenerStopReason) {
        perform(machine.stop(reason))
    }

    func checkDeadline(at now: NIODeadline, limits: ListenerLimits) -> ListenerStopReason? {
        let action = machine.tick(at: now, limits: limits)
        perform(action)
        if case .close(let reason) = action { return reason }
        return nil
    }

    /// Performs what the machine decided. A metrics connection never streams nor sends a file, so
    /// those actions cannot come; the answer is written where it is made.
    private func perform(_ action: ListenerStateMachine.Action) {
        switch action {
        case .nothing, .answer, .sendHead, .pump, .pumpFile:
            break
        case .close:
            context?.close(promise: nil)
        case .forget:
            if let id { connections.remove(id) }
        }
    }
}
