import NIOCore
import NIOPosix

/// A server on 127.0.0.1 that misbehaves on purpose, for the hostile-server tests: each request
/// gets a script chosen by its path (send these bytes, wait, drip bytes slowly, never answer,
/// close). What real stations do wrong, on demand.
package final class ScriptedServer: Sendable {
    package enum Step: Sendable, Hashable {
        case send([UInt8])
        case wait(seconds: Double)
        /// Sends the bytes one at a time, `perSecond` a second.
        case drip([UInt8], perSecond: Double)
        /// Keeps the connection open and silent until the client goes away.
        case hang
        case close
    }

    /// What the client asked for: the path and the header lines (`Name: value`), for scripts
    /// that answer by a header (an Authorization check).
    package struct Request: Sendable, Hashable {
        package let path: String
        package let headerLines: [String]

        /// The value of the first field named `name` (case-insensitive), trimmed.
        package func field(_ name: String) -> String? {
            for line in headerLines {
                guard let colon = line.firstIndex(of: ":"), line[..<colon].lowercased() == name.lowercased() else { continue }
                return String(line[line.index(after: colon)...].drop { $0 == " " })
            }
            return nil
        }
    }

    package let port: Int
    private let channel: any Channel

    /// `script` maps a request path to what the server does; it runs on an event loop.
    package static func start(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        script: @escaping @Sendable (_ path: String) -> [Step]
    ) async throws -> ScriptedServer {
        try await startReadingHeaders(eventLoopGroup: eventLoopGroup) { script($0.path) }
    }

    /// `script` maps the whole request, header lines included, to what the server does; it runs
    /// on an event loop. (Another name than `start`, so that `start { _ in ... }` stays unambiguous.)
    package static func startReadingHeaders(
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        script: @escaping @Sendable (_ request: Request) -> [Step]
    ) async throws -> ScriptedServer {
        let channel = try await ServerBootstrap(group: eventLoopGroup)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ScriptHandler(script: script))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw StationError.invalidConfiguration("the scripted server has no port")
        }
        return ScriptedServer(port: port, channel: channel)
    }

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    package func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    package func stop() async throws {
        try await channel.close()
    }

    /// An HTTP head: status line and fields, CRLF-terminated, blank line included.
    package static func head(_ statusLine: String, _ fields: [String]) -> [UInt8] {
        Array((([statusLine] + fields).joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// `bytes` as HTTP/1.1 chunks of `size` bytes, with the terminating chunk.
    package static func chunked(_ bytes: [UInt8], size: Int) -> [UInt8] {
        var body: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + size)
            body += Array((String(end - offset, radix: 16) + "\r\n").utf8) + bytes[offset..<end] + Array("\r\n".utf8)
            offset = end
        }
        return body + Array("0\r\n\r\n".utf8)
    }
}

/// Reads the request head, then plays the script. One per connection, on its event loop.
private final class ScriptHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let script: @Sendable (ScriptedServer.Request) -> [ScriptedServer.Step]
    private var request: [UInt8] = []
    private var started = false

    init(script: @escaping @Sendable (ScriptedServer.Request) -> [ScriptedServer.Step]) {
        self.script = script
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !started else { return }
        var buffer = unwrapInboundIn(data)
        request += buffer.readBytes(length: buffer.readableBytes) ?? []
        guard let end = request.firstRange(of: Array("\r\n\r\n".utf8)) else {
            if request.count > 16 * 1024 { context.close(promise: nil) }
            return
        }
        started = true
        let head = String(decoding: request[..<end.lowerBound], as: UTF8.self)
        let lines = head.split(separator: "\r\n").map(String.init)
        let path = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        run(script(ScriptedServer.Request(path: path, headerLines: Array(lines.dropFirst())))[...], context: context)
    }

    private func run(_ steps: ArraySlice<ScriptedServer.Step>, context: ChannelHandlerContext) {
        guard let step = steps.first else {
            context.closeSendingFIN()
            return
        }
        let rest = steps.dropFirst()
        let loop = context.eventLoop
        switch step {
        case .send(let bytes):
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
            run(rest, context: context)
        case .wait(let seconds):
            let next = NIOLoopBound((self, context), eventLoop: loop)
            loop.scheduleTask(in: .milliseconds(Int64(seconds * 1000))) { next.value.0.run(rest, context: next.value.1) }
        case .drip(let bytes, let perSecond):
            drip(bytes[...], perSecond: perSecond, then: rest, context: context)
        case .hang:
            return
        case .close:
            context.closeSendingFIN()
        }
    }

    /// One byte now and the rest a byte at a time, each `1 / perSecond` after the last, until the
    /// client goes away: slicing, so a long drip costs no copy of its tail per byte.
    private func drip(_ bytes: ArraySlice<UInt8>, perSecond: Double, then rest: ArraySlice<ScriptedServer.Step>,
                      context: ChannelHandlerContext) {
        guard let first = bytes.first else {
            run(rest, context: context)
            return
        }
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: CollectionOfOne(first))), promise: nil)
        let next = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(Int64(1000 / max(perSecond, 0.001)))) {
            guard next.value.1.channel.isActive else { return }
            next.value.0.drip(bytes.dropFirst(), perSecond: perSecond, then: rest, context: next.value.1)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
