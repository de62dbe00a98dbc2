import Glibc
import NIOCore
import NIOHTTP1

/// One client connection: the only owner of its `ListenerStateMachine`, it performs what the
/// machine returns. The directory and the mount's hub reach the machine through this type's
/// methods only. Lives on the relay's single event loop, like them.
final class RelayConnectionHandler: ChannelInboundHandler, HeldConnection {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    private let directory: RelayDirectory
    /// The mount this connection streams, once it asked for one.
    private(set) var hub: RelayHub?
    /// What the client sent, counted in front of the decoder.
    let requestBytes: RequestSizeLimit
    private(set) var id = 0
    private var machine: ListenerStateMachine
    /// Set once the request asked for metadata.
    private(set) var metaint: Int?
    private(set) var bytesSent = 0
    /// A request head arrived (for status counters: connections that never ask are odd).
    private(set) var hadRequest = false
    private var context: ChannelHandlerContext?
    /// The client's address, for logs.
    private(set) var remote = "?"
    /// The recording being sent, while one is: closed when the connection goes.
    private var file: OpenRecording?
    /// Set once the connection was given a file (the directory counts these).
    private(set) var sentFile = false

    /// `connectedAt` is the loop's time (`EventLoop.now`), like every instant the machine sees,
    /// so a test's embedded loop can move it.
    init(directory: RelayDirectory, requestBytes: RequestSizeLimit, connectedAt: NIODeadline) {
        self.directory = directory
        self.requestBytes = requestBytes
        self.machine = ListenerStateMachine(connectedAt: connectedAt)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        remote = context.channel.remoteAddress.map { "\($0)" } ?? "?"
        guard let id = directory.connected(self) else {
            // Over the descriptor budget: closed before it can ask for anything.
            perform(machine.stop(.failed("refused: too many connections")))
            return
        }
        self.id = id
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // One request per connection: the answer (or the stream) ends it. Later input is ignored.
        guard machine.isAwaitingRequest, case .head(let head) = unwrapInboundIn(data) else { return }
        hadRequest = true
        directory.received(head, from: self, localAddress: context.channel.localAddress)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            perform(machine.becameWritable())
        } else {
            perform(machine.becameUnwritable(at: context.eventLoop.now))
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closeFile()
        perform(machine.closed())
        self.context = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A malformed or oversized request gets its 400; a reset or any later error just ends
        // this connection. Either way no other listener notices.
        if error is HTTPParserError || error is RequestTooLarge, machine.isAwaitingRequest {
            answer(RelayResponses.text(.badRequest, "400 bad request"), status: 400)
        } else {
            perform(machine.stop(.failed("\(error)")))
        }
    }

    // MARK: The machine's view, for tests

    /// Why the connection ended; nil while it lasts.
    var stopReason: ListenerStopReason? { machine.stopReason }

    var isStreaming: Bool { machine.isStreaming }

    // MARK: Events from the directory and the hub

    /// The hub accepted this connection as a listener of its mount.
    func streamRequested(from hub: RelayHub, metaint: Int?, ring: PacketRing, burstSeconds: Double) {
        self.hub = hub
        self.metaint = metaint
        perform(machine.streamRequested(metaint: metaint, ring: ring, burstSeconds: burstSeconds))
    }

    /// The hub's ring took new audio.
    func audioArrived(ring: PacketRing, burstSeconds: Double) {
        perform(machine.audioArrived(ring: ring, burstSeconds: burstSeconds))
    }

    /// Performs what the machine decided; the only place that acts on its answers.
    private func perform(_ action: ListenerStateMachine.Action) {
        switch action {
        case .nothing, .answer:
            // An answer's text is written by `answer`, which asked the machine.
            break
        case .sendHead:
            hub?.streamStarted(self)
        case .pump:
            hub?.pump(self)
        case .pumpFile:
            pumpFile()
        case .close:
            context?.close(promise: nil)
        case .forget(let reason):
            directory.disconnected(self, reason: reason)
        }
    }

    // MARK: Writes (called by the hub)

    /// Writes a listener what the ring holds for it, until the socket is full or it is live.
    /// Every audio write is a view of the ring's packet buffer: no copy, no allocation.
    func pump(_ ring: PacketRing) -> (bytes: Int, skippedPackets: Int) {
        guard let context else { return (0, 0) }
        var bytes = 0, skipped = 0
        while context.channel.isWritable, let write = machine.nextWrite(from: ring) {
            switch write {
            case .audio(let buffer), .metadata(let buffer):
                bytes += buffer.readableBytes
                context.write(wrapOutboundOut(buffer), promise: nil)
            case .skippedAhead(let packets):
                skipped += packets
            case .end:
                // What was written goes out first: a close after the flush below.
                if bytes > 0 { context.flush() }
                context.close(promise: nil)
            }
        }
        if bytes > 0 { context.flush() }
        bytesSent += bytes
        return (bytes, skipped)
    }

    /// The stream's response head. Flushed on its own: the pump that follows flushes only when it
    /// wrote audio, and a head left in the pipeline would keep a player waiting for the next drain.
    /// Bytes outside the ring (an Ogg link's header pages), before the listener's first packet.
    func send(_ bytes: ByteBuffer) {
        guard let context else { return }
        bytesSent += bytes.readableBytes
        context.writeAndFlush(wrapOutboundOut(bytes), promise: nil)
    }

    func send(_ head: String) {
        guard let context else { return }
        let buffer = context.channel.allocator.buffer(string: head)
        bytesSent += buffer.readableBytes
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    /// A one-shot answer: written, flushed, then the connection closes.
    ///
    /// Only our side closes at first: closing while the client's request is still arriving (an
    /// oversized one, say) would reset the connection and lose the answer. The client closes
    /// after reading it; `lingerLimit` later we close anyway. A client that never reads the
    /// answer (a page, the status) would hold its slot for good, the write never done: the
    /// connection closes `answerLimit` after the answer began, however far the write got.
    func answer(_ text: String, status: Int) {
        guard machine.answered(status: status) == .answer, let context else { return }
        let buffer = context.channel.allocator.buffer(string: text)
        bytesSent += buffer.readableBytes
        let loop = context.eventLoop.assumeIsolated()
        loop.scheduleTask(in: Self.answerLimit) { context.close(promise: nil) }
        context.writeAndFlush(wrapOutboundOut(buffer)).assumeIsolated().whenComplete { _ in
            context.close(mode: .output, promise: nil)
            loop.scheduleTask(in: Self.lingerLimit) { context.close(promise: nil) }
        }
    }

    // MARK: Files (called by the directory)

    /// Sends bytes `range` of `recording` after `head`, a chunk at a time as the socket takes them;
    /// the connection owns the descriptor from now on.
    func sendFile(_ recording: OpenRecording, head: String, range: Range<Int>, status: Int) {
        guard machine.isAwaitingRequest, let context else {
            Glibc.close(recording.descriptor)
            return
        }
        file = recording
        sentFile = true
        let buffer = context.channel.allocator.buffer(string: head)
        bytesSent += buffer.readableBytes
        context.write(wrapOutboundOut(buffer), promise: nil)
        perform(machine.fileRequested(range: range, status: status))
    }

    /// A chunk read per step: with the write watermarks, at most a few chunks of a file are in
    /// memory per connection, whatever its size.
    static let fileChunkBytes = 64 * 1024

    /// Reads and writes the file's next chunks until the socket is full or all is sent. The reads
    /// block the loop, one local chunk at a time (well under a millisecond from a disk or the
    /// page cache); a thread pool hop per chunk would cost more than it saves.
    private func pumpFile() {
        guard let context else { return }
        var wrote = false
        while context.channel.isWritable {
            switch machine.nextFileStep(maxBytes: Self.fileChunkBytes) {
            case .none:
                if wrote { context.flush() }
                return
            case .finished:
                closeFile()
                let loop = context.eventLoop.assumeIsolated()
                context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0))).assumeIsolated().whenComplete { _ in
                    context.close(mode: .output, promise: nil)
                    loop.scheduleTask(in: Self.lingerLimit) { context.close(promise: nil) }
                }
                return
            case .send(let offset, let count):
                guard let descriptor = file?.descriptor else { return }
                var buffer = context.channel.allocator.buffer(capacity: count)
                let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                    max(0, pread(descriptor, raw.baseAddress, count, off_t(offset)))
                }
                // Shorter than the size the head promised: the file shrank, and the answer cannot be whole.
                guard read == count else {
                    perform(machine.stop(.failed("recording shrank while being sent")))
                    return
                }
                bytesSent += count
                wrote = true
                context.write(wrapOutboundOut(buffer), promise: nil)
            }
        }
        if wrote { context.flush() }
    }

    private func closeFile() {
        guard let recording = file else { return }
        file = nil
        Glibc.close(recording.descriptor)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        closeFile()
    }

    private static let lingerLimit = TimeAmount.seconds(2)
    /// Long enough for any answer but a stream to reach a client that reads it.
    static let answerLimit = TimeAmount.seconds(10)

}

extension RelayConnectionHandler {
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
}

/// The client sent more than a request can reasonably be.
struct RequestTooLarge: Error {}

/// Counts what a client sends, in front of the HTTP decoder: a player sends one short request,
/// so past `limit` bytes the client is not one (and must not make the decoder buffer more).
final class RequestSizeLimit: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let limit: Int
    /// Bytes the client has sent (read by the connection handler for its diagnostics).
    private(set) var received = 0

    init(limit: Int) {
        self.limit = limit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let size = unwrapInboundIn(data).readableBytes
        let wasWithin = received <= limit
        received += size
        if received <= limit {
            context.fireChannelRead(data)
        } else if wasWithin {
            context.fireErrorCaught(RequestTooLarge())
        }
    }
}
