import Dispatch
import Locking
import Logging

/// Hands each event to every sink in turn. A sink that throws is detached; the others go on.
/// Loop-confined.
final class FanOut {
    private var sinks: [any StreamSink]
    private let logger: Logger

    init(_ sinks: [any StreamSink], logger: Logger) {
        self.sinks = sinks
        self.logger = logger
    }

    func emit(_ event: StreamEvent) {
        var failed: [Int] = []
        for (index, sink) in sinks.enumerated() {
            do {
                try sink.receive(event)
            } catch {
                logger.error("a sink failed and was detached: \(error)")
                failed.append(index)
            }
        }
        for index in failed.reversed() { sinks.remove(at: index) }
    }
}

/// Runs a slow sink on its own serial queue so the ingest thread never waits for it.
///
/// Events are handed over in batches: the ingest thread appends to an inbox and wakes the queue
/// only when it was idle, so a fast stream costs one wake-up per burst, not one per packet.
/// With `coalescing`, the wake-up after idle waits that long, so a real-time stream (a small
/// read every few milliseconds) costs a few wake-ups a second; a backlog of its batch (64 events
/// unless given) wakes the queue at once, so a fast source is never held back by the delay.
/// With an infinite `coalescing` only the backlog (or `drain`) wakes the queue: no timer at all,
/// for a sink nothing waits for.
/// `.lossless` keeps every event (memory grows while the sink lags: for recorders);
/// `.dropPackets(beyond:)` drops packets, never other events, past that many pending (for players).
package final class QueuedSink: StreamSink, CongestionSignalling {
    package enum Policy: Sendable, Hashable {
        case lossless
        case dropPackets(beyond: Int)
    }

    private struct Inbox {
        var events: [StreamEvent] = []
        var wake = Wake.idle
        var dropped = 0
        var failed = false
        var reliefWaiter: (@Sendable () -> Void)?
    }

    /// Past this many waiting events a lossless queue reports congestion (about 0.4 MB of
    /// 128 kbps frames); below `lowWater` it is relieved.
    private static let highWater = 1024
    private static let lowWater = 256

    /// Whether a drain is on its way, and how soon.
    private enum Wake {
        case idle
        /// A drain runs after the coalescing delay.
        case delayed
        /// A drain runs as soon as the queue gets to it.
        case immediate
    }

    private static let urgentCount = 64

    private let sink: any StreamSink
    private let policy: Policy
    /// Waiting events that wake the queue at once: the batch, or fewer when packets are
    /// dropped before that many wait (else a queue without a timer would never wake).
    private let backlog: Int
    private let coalescing: Double
    private let queue: DispatchQueue
    private let inbox = Locked(Inbox())

    /// `target`: nil gives the sink a thread of its own whenever it has work (for a sink that may
    /// block for long, such as a pipe to a slow reader). A shared pool such as
    /// `.global(qos: .utility)` serves many sinks with a few threads (recorders of many stations:
    /// 500 stations would otherwise mean 500 threads, each with its stack and malloc arena).
    /// `batch`: how many waiting events wake the queue at once (`urgentCount` unless given; at
    /// most `lowWater`, so a lossless queue always wakes before it reports congestion).
    package init(_ sink: any StreamSink, label: String, policy: Policy = .lossless, coalescing: Double = 0,
                target: DispatchQueue? = nil, batch: Int? = nil) {
        self.sink = sink
        self.policy = policy
        let batch = max(1, min(batch ?? Self.urgentCount, Self.lowWater))
        if case .dropPackets(let limit) = policy { backlog = max(1, min(batch, limit)) } else { backlog = batch }
        self.coalescing = coalescing
        self.queue = DispatchQueue(label: "airtap.sink.\(label)", target: target)
    }

    package var droppedPackets: Int { inbox.withLock { $0.dropped } }

    package var congestion: (any CongestionSignalling)? { self }

    package func receive(_ event: StreamEvent) throws {
        let wake = inbox.withLock { inbox -> Wake? in
            if case .dropPackets(let limit) = policy, case .packet = event, inbox.events.count >= limit {
                inbox.dropped += 1
                return nil
            }
            inbox.events.append(event)
            switch inbox.wake {
            case .idle:
                inbox.wake = coalescing > 0 && inbox.events.count < backlog ? .delayed : .immediate
                return inbox.wake
            case .delayed where inbox.events.count >= backlog:
                inbox.wake = .immediate
                return .immediate
            case .delayed, .immediate:
                return nil
            }
        }
        switch wake {
        case .immediate: queue.async { [self] in drainInbox() }
        case .delayed where coalescing.isFinite: queue.asyncAfter(deadline: .now() + coalescing) { [self] in drainInbox() }
        case .delayed, .idle, nil: break
        }
    }

    /// Hands over many events at once (a song replayed from memory): one append and one wake-up,
    /// where a `receive` each would wake the queue at every batch.
    package func receive(contentsOf events: [StreamEvent]) throws {
        guard policy == .lossless else {
            for event in events { try receive(event) }
            return
        }
        guard !events.isEmpty else { return }
        let wakes = inbox.withLock { inbox -> Bool in
            if inbox.events.isEmpty { inbox.events = events } else { inbox.events.append(contentsOf: events) }
            defer { inbox.wake = .immediate }
            return inbox.wake != .immediate
        }
        if wakes { queue.async { [self] in drainInbox() } }
    }

    package var isCongested: Bool {
        guard policy == .lossless else { return false }
        return inbox.withLock { $0.events.count >= Self.highWater }
    }

    package func notifyWhenRelieved(_ relieved: @escaping @Sendable () -> Void) {
        let now = inbox.withLock { inbox -> Bool in
            if inbox.events.count < Self.lowWater { return true }
            inbox.reliefWaiter = relieved
            return false
        }
        if now { relieved() }
    }

    /// Waits until every event handed over so far has been processed (a coalescing delay
    /// still pending is cut short).
    package func drain() {
        queue.sync { drainInbox() }
    }

    /// On the queue: takes the inbox's events a batch at a time until it is empty. The two
    /// arrays swap places, so steady streaming allocates nothing here.
    private func drainInbox() {
        var batch: [StreamEvent] = []
        var handedOver = false
        while true {
            var relieved: (@Sendable () -> Void)?
            let failed = inbox.withLock { inbox -> Bool in
                swap(&inbox.events, &batch)
                if batch.isEmpty { inbox.wake = .idle }
                // Taking the batch is what empties the inbox: the waiting transfer may go on.
                if inbox.events.count < Self.lowWater {
                    relieved = inbox.reliefWaiter
                    inbox.reliefWaiter = nil
                }
                return inbox.failed
            }
            relieved?()
            if batch.isEmpty {
                if handedOver, !failed { sink.batchEnded() }
                return
            }
            if !failed {
                do {
                    for event in batch { try sink.receive(event) }
                    handedOver = true
                } catch {
                    inbox.withLock { $0.failed = true }
                }
            }
            // A batch far above the usual (a song replayed from memory) lets its room go.
            if batch.capacity > Self.highWater { batch = [] } else { batch.removeAll(keepingCapacity: true) }
        }
    }
}
