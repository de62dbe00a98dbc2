import AirtapSupport
import CurlSource
import Locking

/// The skeleton every streaming command shares (record, play, relay, serve, probe): the job's
/// sessions start together and run until each stops by itself, the limit passes (`--for`,
/// `--until`: `.limitReached`, on the curl loop's clock, the same way for every command) or a
/// signal arrives (SIGINT, SIGTERM, SIGHUP: `.userRequest`). `stop` is how the job stops for
/// either: by default every session; `play` stops its player too, `serve` its server after.
/// A run without sessions (`record --shard` owning no station) idles until the limit or a signal.
package final class StationRun: Sendable {
    package let sessions: [any StationSource]
    private let loop: CurlMultiLoop
    private let stopJob: @Sendable (StopReason) -> Void
    private let signals: [Int32]
    private let trap = Locked<SignalTrap?>(nil)
    private let ended = Locked(Ended.running([]))

    /// Whether the job has been told to stop (by the limit, a signal or `stop`), and who waits for it.
    private enum Ended {
        case running([CheckedContinuation<Void, Never>])
        case stopped
    }

    package init(sessions: [any StationSource], loop: CurlMultiLoop, signals: [Int32] = SignalTrap.stopSignals,
                 stop: (@Sendable (StopReason) -> Void)? = nil) {
        self.sessions = sessions
        self.loop = loop
        self.signals = signals
        self.stopJob = stop ?? { reason in for session in sessions { session.stop(reason) } }
    }

    /// Every stop goes through here: the job's own stop, and the end a run without sessions waits for.
    private func stopNow(_ reason: StopReason) {
        let waiters = ended.withLock { ended -> [CheckedContinuation<Void, Never>] in
            guard case .running(let waiters) = ended else { return [] }
            ended = .stopped
            return waiters
        }
        for waiter in waiters { waiter.resume() }
        stopJob(reason)
    }

    /// Starts every session; stops the job `limit` seconds from now, if given, or at a signal.
    package func start(limit: Double?) {
        trap.withLock { trap in
            trap?.cancel()
            trap = SignalTrap(signals) { [self] in stopNow(.userRequest) }
        }
        for session in sessions { session.start() }
        if let limit { self.limit(after: limit) }
    }

    /// Stops the job `seconds` from now with `.limitReached`, on the curl loop's clock.
    package func limit(after seconds: Double) {
        loop.schedule(after: seconds) { [self] in stopNow(.limitReached) }
    }

    /// Stops the job now, as a signal would.
    package func stop(_ reason: StopReason) { stopNow(reason) }

    /// Whether the job has been told to stop (the limit, a signal or `stop`).
    package var isStopping: Bool {
        ended.withLock { if case .stopped = $0 { true } else { false } }
    }

    /// Each session's stop reason, in order, once all have stopped. Signals stay trapped until
    /// `finish()`: what a command does after its sessions (draining the files) is not cut short.
    /// Without sessions: once the job was told to stop (no reasons).
    package func stopped() async -> [StopReason] {
        if sessions.isEmpty {
            await withCheckedContinuation { waiter in
                let waiting = ended.withLock { ended -> Bool in
                    guard case .running(let waiters) = ended else { return false }
                    ended = .running(waiters + [waiter])
                    return true
                }
                if !waiting { waiter.resume() }
            }
            return []
        }
        var reasons: [StopReason] = []
        for session in sessions { reasons.append(await session.stopped()) }
        return reasons
    }

    /// Waits for every session like `stopped()`, but the first session to stop with an error
    /// stops the whole job (`.userRequest`; `serve`: a wrong URL should not leave a server up with
    /// a dead mount). Returns that first error; nil when every session stopped otherwise (all
    /// together at the limit or a signal).
    package func stoppedAtFirstError() async -> AirtapError? {
        await withTaskGroup(of: AirtapError?.self) { group in
            for session in sessions {
                group.addTask {
                    if case .error(let error) = await session.stopped() { return error }
                    return nil
                }
            }
            var first: AirtapError?
            for await error in group where first == nil {
                if let error {
                    first = error
                    stop(.userRequest)
                }
            }
            return first
        }
    }

    /// Start, then wait for every session: the whole run of a simple job.
    package func run(limit: Double?) async -> [StopReason] {
        start(limit: limit)
        return await stopped()
    }

    /// Stops trapping the signals (they stay ignored: a late one must not kill the clean-up).
    package func finish() {
        trap.withLock { $0?.cancel(); $0 = nil }
    }
}
