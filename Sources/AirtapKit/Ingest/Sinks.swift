import Dispatch
import Logging
import Synchronization

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
/// `.lossless` keeps every event (memory grows while the sink lags: for recorders);
/// `.dropPackets(beyond:)` drops packets, never other events, past that many pending (for players).
public final class QueuedSink: StreamSink {
    public enum Policy: Sendable, Hashable {
        case lossless
        case dropPackets(beyond: Int)
    }

    private let sink: any StreamSink
    private let policy: Policy
    private let queue: DispatchQueue
    private let pending = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)
    private let failed = Atomic<Bool>(false)

    public init(_ sink: any StreamSink, label: String, policy: Policy = .lossless) {
        self.sink = sink
        self.policy = policy
        self.queue = DispatchQueue(label: "airtap.sink.\(label)")
    }

    public var droppedPackets: Int { dropped.load(ordering: .relaxed) }

    public func receive(_ event: StreamEvent) throws {
        if case .dropPackets(let limit) = policy, case .packet = event, pending.load(ordering: .relaxed) >= limit {
            dropped.add(1, ordering: .relaxed)
            return
        }
        pending.add(1, ordering: .relaxed)
        queue.async { [self] in
            defer { pending.subtract(1, ordering: .relaxed) }
            guard !failed.load(ordering: .relaxed) else { return }
            do { try sink.receive(event) } catch { failed.store(true, ordering: .relaxed) }
        }
    }

    /// Waits until every event handed over so far has been processed.
    public func drain() {
        queue.sync {}
    }
}
