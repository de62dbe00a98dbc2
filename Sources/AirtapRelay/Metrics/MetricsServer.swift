import AirtapKit
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// `record --metrics-listen HOST:PORT`: a tiny HTTP server whose one page is `/metrics`, rendered
/// on each request by `render` (from the recorders' own counters). One event loop, one request
/// per connection; a client that sends more than a request or nothing for 10 s is closed.
package final class MetricsServer: Sendable {
    package let host: String
    package let port: Int
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel

    private init(host: String, port: Int, group: MultiThreadedEventLoopGroup, channel: any Channel) {
        self.host = host
        self.port = port
        self.group = group
        self.channel = channel
    }

    package static func start(host: String, port: Int, render: @escaping @Sendable () -> String) async throws(AirtapError) -> MetricsServer {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let channel = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 64)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            IdleStateHandler(readTimeout: .seconds(10)),
                            RequestSizeLimit(limit: 16 * 1024),
                            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)),
                            MetricsHandler(render: render),
                        ])
                    }
                }
                .bind(host: host, port: port)
                .get()
            let bound = channel.localAddress?.port ?? port
            return MetricsServer(host: host, port: bound, group: group, channel: channel)
        } catch {
            try? await group.shutdownGracefully()
            throw .localIO("cannot listen on \(host):\(port) for metrics: \(error)")
        }
    }

    package func shutdown() async {
        try? await channel.close()
        try? await group.shutdownGracefully()
    }
}

/// Answers one request: `/metrics` (GET or HEAD), 404 for any other path, 405 for other methods.
private final class MetricsHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private let render: @Sendable () -> String
    private var answered = false

    init(render: @escaping @Sendable () -> String) {
        self.render = render
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered, case .head(let head) = unwrapInboundIn(data) else { return }
        answered = true
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? head.uri
        let text: String
        if head.method != .GET && head.method != .HEAD {
            text = RelayResponses.text(.methodNotAllowed, "405 method not allowed", extraHeaders: ["Allow: GET, HEAD"])
        } else if path == "/metrics" {
            text = RelayResponses.document(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8", body: render(),
                                           includeBody: head.method == .GET)
        } else {
            text = RelayResponses.text(.notFound, "404 not found: the metrics are at /metrics", includeBody: head.method == .GET)
        }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(string: text))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
