import NIOCore

/// Why a relay connection ended.
enum ListenerStopReason: Equatable, CustomStringConvertible {
    /// A one-shot answer (status, playlist, an error) went out.
    case answered(status: Int)
    case clientClosed
    /// Its socket took nothing for this many seconds.
    case stalled(seconds: Int)
    /// It connected and never finished sending a request.
    case requestTimeout
    case serverShutdown
    /// The mount's codec changed: one response carries one codec, so the listener reconnects
    /// and gets the new one under its own Content-Type.
    case formatChanged
    case failed(String)

    var description: String {
        switch self {
        case .answered(let status): "answered \(status)"
        case .clientClosed: "client closed"
        case .stalled(let seconds): "stalled: took nothing for \(seconds) s"
        case .requestTimeout: "no request in time"
        case .serverShutdown: "server shutdown"
        case .formatChanged: "the stream's codec changed"
        case .failed(let reason): reason
        }
    }
}

/// How long a connection may take to ask, and how long a listener may stay stuck.
struct ListenerLimits {
    var requestTimeout: TimeAmount
    var stallTimeout: TimeAmount
}

/// One relay connection's lifecycle, without sockets: events in, actions out.
///
/// ```
/// awaitingRequest ──stream request──> awaitingAudio ──first packet──> streaming ──> stopped(reason)
///        ├──────────── file request ──> sendingFile ──last byte──────────────────────────┤
///        └──────────── other request (answered) / timeout / close ──────────────────────┘
/// ```
/// Every event returns an `Action`; the connection that owns the machine (and nothing else)
/// performs it. Tests drive the machine directly with a ring and instants of their choosing.
struct ListenerStateMachine {
    enum State {
        case awaitingRequest(since: NIODeadline)
        /// Accepted as a listener; upstream has no audio yet, so no head can be sent.
        case awaitingAudio(metaint: Int?)
        case streaming(Cursor)
        /// A recording's file (or a range of it), a chunk at a time as the socket takes it.
        case sendingFile(FileCursor)
        case stopped(ListenerStopReason)
    }

    /// Where a file transfer is: the bytes still to send are `next..<end`.
    struct FileCursor {
        var next: Int
        let end: Int
        /// The response's status, the stop reason once the last byte is out.
        let status: Int
        var blockedSince: NIODeadline?
    }

    /// What to do next for a file transfer.
    enum FileStep: Equatable {
        /// Read these bytes of the file and write them.
        case send(offset: Int, count: Int)
        /// Everything is written: flush, then close.
        case finished
        /// No transfer (it ended, or this is not one).
        case none
    }

    /// Where a streaming listener is in the ring, and in its own metadata interleaving.
    struct Cursor {
        /// The sequence of the next packet to take from the ring.
        var next: Int
        /// What is still unsent of the packet being written: metadata blocks can fall inside a
        /// packet, and a packet once begun is finished even if the ring has dropped it since.
        var current: ByteBuffer
        var currentTitle: TitleBlock
        var metadata: MetadataSchedule?
        /// Since when the socket has refused more (nil while it takes data).
        var blockedSince: NIODeadline?
        /// The ring's codec epoch this response carries.
        let format: Int
    }

    /// ICY interleaving for one listener: a block every `interval` audio bytes.
    struct MetadataSchedule {
        let interval: Int
        var bytesUntilBlock: Int
        /// The title id of the last block with content; nil before the first block.
        var lastSentTitleID: Int?

        init(interval: Int) {
            self.interval = interval
            self.bytesUntilBlock = interval
        }
    }

    /// What to write next to a streaming listener.
    enum Write: Equatable {
        case audio(ByteBuffer)
        case metadata(ByteBuffer)
        /// Nothing to write: the listener fell out of the ring and now resumes at the live edge.
        case skippedAhead(packets: Int)
        /// Nothing more on this response: close the connection, for this reason.
        case end(ListenerStopReason)
    }

    /// What the connection's engine does after an event.
    enum Action: Equatable {
        case nothing
        /// Send the stream's response head (and an Ogg link's header pages), then pump.
        case sendHead
        /// Write what the ring holds for this listener, until the socket is full or it is live.
        case pump
        /// Write the file's next chunks, until the socket is full or the transfer is done.
        case pumpFile
        /// Write the one-shot answer, then close.
        case answer
        /// Close the connection.
        case close(ListenerStopReason)
        /// The connection is gone: forget it, for this reason.
        case forget(ListenerStopReason)
    }

    private(set) var state: State

    init(connectedAt now: NIODeadline) {
        state = .awaitingRequest(since: now)
    }

    /// Counts against `--max-listeners` (accepted for streaming and not yet gone).
    var isListener: Bool {
        switch state {
        case .awaitingAudio, .streaming: true
        case .awaitingRequest, .sendingFile, .stopped: false
        }
    }

    var isStreaming: Bool {
        if case .streaming = state { true } else { false }
    }

    var stopReason: ListenerStopReason? {
        if case .stopped(let reason) = state { reason } else { nil }
    }

    /// Still waiting for its request: any later input is ignored, and a connection that never
    /// asks is the one closed first to make room.
    var isAwaitingRequest: Bool {
        if case .awaitingRequest = state { true } else { false }
    }

    // MARK: Events

    /// A stream request was accepted: start with a burst of up to `burstSeconds` of recent
    /// packets (`sendHead`), or wait for the first one (`nothing`).
    mutating func streamRequested(metaint: Int?, ring: PacketRing, burstSeconds: Double) -> Action {
        guard case .awaitingRequest = state else { return .nothing }
        guard !ring.isEmpty else {
            state = .awaitingAudio(metaint: metaint)
            return .nothing
        }
        startStreaming(metaint: metaint, at: ring.burstStart(seconds: burstSeconds), ring: ring)
        return .sendHead
    }

    /// The ring took new audio: a waiting listener's head is due now, a streaming one is pumped.
    mutating func audioArrived(ring: PacketRing, burstSeconds: Double) -> Action {
        guard !ring.isEmpty else { return .nothing }
        switch state {
        case .awaitingAudio(let metaint):
            startStreaming(metaint: metaint, at: ring.burstStart(seconds: burstSeconds), ring: ring)
            return .sendHead
        case .streaming:
            return .pump
        case .awaitingRequest, .sendingFile, .stopped:
            return .nothing
        }
    }

    /// Anything but a stream was asked for (or the request was malformed): the answer goes
    /// out, then the connection closes. Only a connection still waiting for its request is
    /// answered; one that has ended stays ended.
    mutating func answered(status: Int) -> Action {
        guard case .awaitingRequest = state else { return .nothing }
        state = .stopped(.answered(status: status))
        return .answer
    }

    /// A recording's bytes `range` were asked for and its head is going out: the transfer starts.
    /// An empty range (a HEAD, an empty file) has nothing to send and finishes at the first step.
    mutating func fileRequested(range: Range<Int>, status: Int) -> Action {
        guard case .awaitingRequest = state else { return .nothing }
        state = .sendingFile(FileCursor(next: range.lowerBound, end: range.upperBound, status: status, blockedSince: nil))
        return .pumpFile
    }

    /// The next chunk of at most `maxBytes` to send; once none is left the transfer has ended
    /// (`answered` with its status) and the connection is to close after the flush.
    mutating func nextFileStep(maxBytes: Int) -> FileStep {
        guard case .sendingFile(var cursor) = state else { return .none }
        guard cursor.next < cursor.end else {
            state = .stopped(.answered(status: cursor.status))
            return .finished
        }
        let count = min(maxBytes, cursor.end - cursor.next)
        defer {
            cursor.next += count
            state = .sendingFile(cursor)
        }
        return .send(offset: cursor.next, count: count)
    }

    /// The server ends the connection (shutdown, an error, room for a newer one). One that had
    /// already ended keeps its first reason but is still closed: an answer still being written
    /// or lingering goes too.
    mutating func stop(_ reason: ListenerStopReason) -> Action {
        if case .stopped(let first) = state { return .close(first) }
        state = .stopped(reason)
        return .close(reason)
    }

    /// The socket closed (either side): why it ended, which is the client's closing unless
    /// the server ended it first.
    mutating func closed() -> Action {
        if case .stopped(let reason) = state { return .forget(reason) }
        state = .stopped(.clientClosed)
        return .forget(.clientClosed)
    }

    /// The socket's buffer filled up (NIO's high watermark): the stall clock starts, and only
    /// `tick` acts on it, so a socket that drains in time costs nothing.
    mutating func becameUnwritable(at now: NIODeadline) -> Action {
        switch state {
        case .streaming(var cursor) where cursor.blockedSince == nil:
            cursor.blockedSince = now
            state = .streaming(cursor)
        case .sendingFile(var cursor) where cursor.blockedSince == nil:
            cursor.blockedSince = now
            state = .sendingFile(cursor)
        default:
            break
        }
        return .nothing
    }

    /// The socket drained: a streaming listener takes more.
    mutating func becameWritable() -> Action {
        switch state {
        case .streaming(var cursor):
            cursor.blockedSince = nil
            state = .streaming(cursor)
            return .pump
        case .sendingFile(var cursor):
            cursor.blockedSince = nil
            state = .sendingFile(cursor)
            return .pumpFile
        default:
            return .nothing
        }
    }

    /// Once a second: a connection that never asked, or a listener stuck too long, goes.
    mutating func tick(at now: NIODeadline, limits: ListenerLimits) -> Action {
        switch state {
        case .awaitingRequest(let since) where now - since >= limits.requestTimeout:
            return stop(.requestTimeout)
        case .streaming(let cursor):
            guard let since = cursor.blockedSince, now - since >= limits.stallTimeout else { return .nothing }
            return stop(.stalled(seconds: Int((now - since).nanoseconds / 1_000_000_000)))
        case .sendingFile(let cursor):
            // A browser stops reading a file it has buffered enough of; it asks for the rest
            // with a Range request when it needs it, so a transfer held up this long can go.
            guard let since = cursor.blockedSince, now - since >= limits.stallTimeout else { return .nothing }
            return stop(.stalled(seconds: Int((now - since).nanoseconds / 1_000_000_000)))
        default:
            return .nothing
        }
    }

    /// The next write for a streaming listener, or nil when it has everything the ring holds.
    /// Allocates nothing: audio is a slice (a view) of the ring's packet buffer.
    mutating func nextWrite(from ring: PacketRing) -> Write? {
        guard case .streaming(var cursor) = state else { return nil }
        defer { if case .streaming = state { state = .streaming(cursor) } }

        if cursor.current.readableBytes == 0 {
            if cursor.next < ring.oldestSequence, let live = ring.newestSequence {
                let skipped = live - cursor.next
                cursor.next = live
                return .skippedAhead(packets: skipped)
            }
            guard let entry = ring.entry(cursor.next) else { return nil }
            guard entry.format == cursor.format else {
                state = .stopped(.formatChanged)
                return .end(.formatChanged)
            }
            cursor.current = entry.audio
            cursor.currentTitle = entry.title
            cursor.next += 1
        }

        if var schedule = cursor.metadata {
            if schedule.bytesUntilBlock == 0 {
                // Written just before the next audio byte, so a title that changes exactly at the
                // boundary is already in it: a block names the audio that follows it.
                let title = cursor.currentTitle
                let block = title.id == schedule.lastSentTitleID ? TitleBlock.noChange : title.bytes
                schedule.lastSentTitleID = title.id
                schedule.bytesUntilBlock = schedule.interval
                cursor.metadata = schedule
                return .metadata(block)
            }
            let length = min(cursor.current.readableBytes, schedule.bytesUntilBlock)
            schedule.bytesUntilBlock -= length
            cursor.metadata = schedule
            return cursor.current.readSlice(length: length).map { .audio($0) }
        }
        let whole = cursor.current
        cursor.current.moveReaderIndex(forwardBy: whole.readableBytes)
        return .audio(whole)
    }

    private mutating func startStreaming(metaint: Int?, at sequence: Int, ring: PacketRing) {
        state = .streaming(Cursor(
            next: sequence, current: ByteBuffer(), currentTitle: .none,
            metadata: metaint.map(MetadataSchedule.init(interval:)), blockedSince: nil, format: ring.format(at: sequence)))
    }
}
