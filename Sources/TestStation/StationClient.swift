import NIOCore
import NIOPosix

/// A deliberately raw HTTP/ICY client for tests and benchmarks: it sends a request head, reads
/// until the server closes (or enough body arrived), and splits the answer at the blank line.
/// It accepts `ICY 200 OK` and never interprets the body, so tests see the exact bytes sent.
package enum StationClient {
    package struct Response: Sendable, Hashable {
        /// The head as sent, up to and excluding the blank line.
        package var head: String
        /// Everything after the blank line (cut to `maxBodyBytes` when one was given).
        package var body: [UInt8]

        package var statusLine: String { head.split(separator: "\r\n", omittingEmptySubsequences: false).first.map(String.init) ?? "" }

        /// The status code from `HTTP/1.x NNN` or `ICY NNN`.
        package var status: Int? {
            let parts = statusLine.split(separator: " ")
            return parts.count >= 2 ? Int(parts[1]) : nil
        }

        /// Header fields in order (names as sent).
        package var headers: [(name: String, value: String)] {
            head.split(separator: "\r\n").dropFirst().compactMap { line in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces.description)
            }
        }

        /// The first value of a header, by case-insensitive name.
        package func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        package var description: String { "the station did not finish answering in time" }
    }

    /// - Parameters:
    ///   - headers: extra request headers, e.g. `[("Icy-MetaData", "1")]`.
    ///   - maxBodyBytes: close as soon as this much body arrived; nil reads until the server closes.
    package static func fetch(
        host: String = "127.0.0.1",
        port: Int,
        path: String = "/stream",
        method: String = "GET",
        headers: [(String, String)] = [],
        maxBodyBytes: Int? = nil,
        // Only a bound on a hang: under TSan on a loaded 2-core machine a realtime stream can take
        // many seconds to begin, and a test that expects a close must see the close, not this.
        timeout: TimeAmount = .seconds(60),
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> Response {
        var request = "\(method) \(path) HTTP/1.0\r\nHost: \(host):\(port)\r\nUser-Agent: airtap-test\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        let head = request

        let loop = eventLoopGroup.next()
        let done = loop.makePromise(of: [UInt8].self)
        let timer: Scheduled<Void>
        do {
            // The request goes out, and the timeout starts, on the event loop as the connect
            // completes: a task pool held by CPU-bound tests could otherwise delay the request
            // past the server's own request timeout, and the server would rightly close.
            timer = try await ClientBootstrap(group: loop)
                // Only a bound on a hang too (NIO's default is 10 s): the loop that completes the
                // connect is shared with the test stations a busy suite runs, and waits its turn.
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            CollectingHandler(maxBodyBytes: maxBodyBytes, done: done))
                    }
                }
                .connect(host: host, port: port)
                .map { channel in
                    channel.writeAndFlush(channel.allocator.buffer(string: head), promise: nil)
                    return channel.eventLoop.scheduleTask(in: timeout) {
                        done.fail(TimedOut())
                        channel.close(promise: nil)
                    }
                }
                .get()
        } catch {
            done.fail(error)  // an unfulfilled promise is a leak NIO asserts on
            throw error
        }
        defer { timer.cancel() }
        let collected = try await done.futureResult.get()
        return split(collected, maxBodyBytes: maxBodyBytes)
    }

    static func split(_ bytes: [UInt8], maxBodyBytes: Int?) -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.dropLast(3).first(where: { bytes[$0..<$0 + 4].elementsEqual(separator) }) else {
            return Response(head: String(decoding: bytes, as: UTF8.self), body: [])
        }
        var body = Array(bytes[(end + 4)...])
        if let maxBodyBytes, body.count > maxBodyBytes { body.removeLast(body.count - maxBodyBytes) }
        return Response(head: String(decoding: bytes[..<end], as: UTF8.self), body: body)
    }
}

/// Accumulates everything received; completes on close, or once enough body arrived.
private final class CollectingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let maxBodyBytes: Int?
    /// Completing twice is harmless (later results are ignored), which the close paths rely on.
    private let done: EventLoopPromise<[UInt8]>
    private var received: [UInt8] = []
    private var bodyStart: Int?

    init(maxBodyBytes: Int?, done: EventLoopPromise<[UInt8]>) {
        self.maxBodyBytes = maxBodyBytes
        self.done = done
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        let searchFrom = max(0, received.count - 3)
        received += buffer.readBytes(length: buffer.readableBytes) ?? []
        if bodyStart == nil {
            let separator: [UInt8] = [13, 10, 13, 10]
            if received.count >= 4,
               let end = (searchFrom...(received.count - 4)).first(where: { received[$0..<$0 + 4].elementsEqual(separator) }) {
                bodyStart = end + 4
            }
        }
        if let maxBodyBytes, let bodyStart, received.count - bodyStart >= maxBodyBytes {
            done.succeed(received)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        done.succeed(received)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        done.fail(error)
        context.close(promise: nil)
    }
}
