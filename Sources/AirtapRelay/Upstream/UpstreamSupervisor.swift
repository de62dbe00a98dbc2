import AirtapKit
import CurlSource
import Logging
import Locking
import Synchronization

/// How long `serve` waits before reconnecting upstream: doubling from `initial` up to `maximum`,
/// with jitter so that many relays of one station do not knock in step. (Record and play use
/// AirtapKit's `ReconnectPolicy` inside `StationSession`, which also splices a reconnect's burst;
/// serve should move to it too, see the issue note.)
public struct UpstreamBackoff: Sendable, Hashable {
    public var initial: Double
    public var maximum: Double
    /// 0.2: each delay is drawn from ±20 % around the nominal one.
    public var jitter: Double

    public init(initial: Double = 1, maximum: Double = 30, jitter: Double = 0.2) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The delay before reconnect `attempt` (1 for the first retry); `unit` in 0...1 picks the jitter.
    public func delay(attempt: Int, unit: Double) -> Double {
        let factor = Double(1 << min(max(attempt - 1, 0), 30))
        let nominal = min(maximum, initial * factor)
        return nominal * (1 - jitter + 2 * jitter * min(max(unit, 0), 1))
    }
}

/// Keeps one station's upstream connected for `serve`: a `StationSession` after another, with the
/// same sinks, so listeners only ever see a gap. Gives up only when the very first connection fails
/// (a wrong URL should not retry forever in silence) or when asked to stop.
public final class UpstreamSupervisor: Sendable {
    private let station: Station
    private let loop: CurlMultiLoop
    private let options: IngestOptions
    private let sinks: [any StreamSink]
    private let logger: Logger
    private let policy: UpstreamBackoff
    private let report: @Sendable (UpstreamState) -> Void
    private let control = Locked(Control())

    private struct Control {
        var session: StationSession?
        var stopRequest: StopReason?
    }

    public init(station: Station, loop: CurlMultiLoop, options: IngestOptions, sinks: [any StreamSink], logger: Logger,
                policy: UpstreamBackoff = UpstreamBackoff(), report: @escaping @Sendable (UpstreamState) -> Void) {
        self.station = station
        self.loop = loop
        self.options = options
        self.sinks = sinks
        self.logger = logger
        self.policy = policy
        self.report = report
    }

    /// Runs until `stop`, or until the first connection fails; returns why it ended.
    public func run() async -> StopReason {
        var attempt = 0
        var hasStreamed = false
        while true {
            let counter = PacketCounter()
            let session = StationSession(station: station, loop: loop, options: options, sinks: [counter as any StreamSink] + sinks, logger: logger)
            let stopRequest = control.withLock { control -> StopReason? in
                if control.stopRequest == nil { control.session = session }
                return control.stopRequest
            }
            if let stopRequest { return stopRequest }
            report(.connecting(attempt: attempt))
            session.start()
            let reason = await session.stopped()
            control.withLock { $0.session = nil }

            switch reason {
            case .userRequest, .limitReached:
                return reason
            case .endOfStream, .error:
                break
            }
            if counter.packets > 0 {
                hasStreamed = true
                attempt = 0
            }
            if !hasStreamed, case .error = reason { return reason }
            attempt += 1
            let delay = policy.delay(attempt: attempt, unit: Double.random(in: 0...1))
            logger.warning("upstream lost (\(reason)); reconnecting in \(String(format: "%.1f", delay)) s")
            report(.reconnecting(attempt: attempt, afterSeconds: delay, reason: reason.description))
            if let stopRequest = await sleep(seconds: delay) { return stopRequest }
        }
    }

    /// Ends the current connection and the supervision (from any thread).
    public func stop(_ reason: StopReason = .userRequest) {
        let session = control.withLock { control -> StationSession? in
            if control.stopRequest == nil { control.stopRequest = reason }
            return control.session
        }
        session?.stop(reason)
    }

    /// Waits, checking for a stop every 100 ms (simpler than cancelling a sleeping task from a
    /// signal handler's thread, and a reconnect delay does not need finer timing).
    private func sleep(seconds: Double) async -> StopReason? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let request = control.withLock({ $0.stopRequest }) { return request }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return control.withLock { $0.stopRequest }
    }
}

/// Counts a connection's packets, to tell "it streamed, then dropped" from "it never worked".
private final class PacketCounter: StreamSink {
    private let count = Atomic<Int>(0)

    var packets: Int { count.load(ordering: .relaxed) }

    func receive(_ event: StreamEvent) throws {
        if case .packet = event { count.add(1, ordering: .relaxed) }
    }
}
