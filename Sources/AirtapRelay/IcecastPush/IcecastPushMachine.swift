import AirtapKit
import ShoutSource

/// The rules of pushing a stream to an Icecast mount, apart from libshout and clocks: when to
/// connect, what a failure means, when to try again. `IcecastPush` performs its answers.
///
/// ```
/// waitingForAudio --packet--> connect --ok--> streaming --send fails--+
///        |                      |                                     |
///        |                      +--fails--+                           |
///        |                                v                           v
///        +------------------------> waitingToRetry(at) <-------- (the policy allows)
///                                         | packet at or after `at`: connect again
///                                         v
///                          stopped (no retries left, or the stream ended)
/// ```
/// Packets that arrive while no connection is up are dropped: a relay resumes where the
/// upstream is now, it never queues up the past.
struct IcecastPushMachine {
    enum State: Sendable, Hashable {
        case waitingForAudio
        case streaming(since: Double)
        case waitingToRetry(at: Double)
        case stopped
    }

    enum PacketAction: Sendable, Hashable {
        case connectAndSend
        case send
        case drop
    }

    /// A failure the push survives: say why, then connect again with the first packet `delay`
    /// seconds from now.
    struct Retry: Sendable, Hashable {
        let attempt: Int
        let delay: Double
        /// What went wrong, naming the server (once).
        let reason: AirtapError

        /// The warning the push logs.
        var message: String { "\(reason); trying again in \(delay.formatted(decimals: 1)) s (attempt \(attempt))" }
    }

    enum FailureAction: Sendable, Hashable {
        case retry(Retry)
        case stop(AirtapError)
    }

    private(set) var state: State = .waitingForAudio
    /// `maxRetries` nil: forever; 0: the first failure ends the push. `retriesBeforeFirstAudio`
    /// false: a first connection that fails ends the push at once; true: a server that cannot be
    /// reached yet (still starting) is tried again by the policy. A first refused login (a wrong
    /// password, a mount another source holds) ends it at once either way.
    let policy: ReconnectPolicy
    let target: String
    private var progress = ReconnectPolicy.Progress()
    private var hasHeldTheMount = false
    /// When the mount was last lost: a refused login soon after is the server still holding it.
    private var mountLostAt: Double?

    /// How long after losing the mount a refused login counts as the server's passing state.
    /// Icecast keeps a source's mount until a read from it has waited `source-timeout` (10 s by
    /// default; raised on servers with slow sources), so a reconnect that comes sooner is
    /// refused. Six times the default covers a raised timeout and spans five backoff steps
    /// (1 + 2 + 4 + 8 + 16 s); a refusal later than that is the server's answer (a changed
    /// password, a mount another source now holds), not a state that passes.
    static let mountReleaseGrace: Double = 60

    init(target: String, policy: ReconnectPolicy) {
        self.target = target
        self.policy = policy
    }

    mutating func packet(now: Double) -> PacketAction {
        switch state {
        case .waitingForAudio: .connectAndSend
        case .streaming: .send
        case .waitingToRetry(let at): now >= at ? .connectAndSend : .drop
        case .stopped: .drop
        }
    }

    mutating func connected(now: Double) {
        guard state != .stopped else { return }
        state = .streaming(since: now)
        hasHeldTheMount = true
    }

    mutating func failed(_ failure: ShoutConnection.ShoutError, now: Double,
                         random: inout some RandomNumberGenerator) -> FailureAction {
        let streamedFor: Double = if case .streaming(let since) = state { now - since } else { 0 }
        if case .streaming = state { mountLostAt = now }
        let error = Self.error(for: failure, target: target)
        guard state != .stopped, let kind = kind(of: failure.kind, now: now) else {
            state = .stopped
            return .stop(error)
        }
        switch policy.decide(after: kind, streamedFor: streamedFor, progress: &progress, random: &random) {
        case .retry(let attempt, let delay):
            state = .waitingToRetry(at: now + delay)
            return .retry(Retry(attempt: attempt, delay: delay, reason: error))
        case .giveUp:
            state = .stopped
            return .stop(error)
        }
    }

    mutating func finish() {
        state = .stopped
    }

    /// How the policy should count a failure; nil when it ends the push at once.
    private func kind(of failure: ShoutConnection.ShoutError.Kind, now: Double) -> ReconnectPolicy.Failure? {
        switch failure {
        case .cannotConnect, .disconnected:
            // A server that is away (restarting, or not up yet beside airtap) comes back.
            return hasHeldTheMount || policy.retriesBeforeFirstAudio ? .transient : nil
        case .loginRefused:
            // Refused while the server may still hold the mount we lost: it frees it soon.
            // Otherwise it is the server's answer: a wrong password or a mount that is taken.
            guard let mountLostAt, now - mountLostAt <= Self.mountReleaseGrace else { return nil }
            return .transient
        case .configuration:
            // A setting libshout refused rarely heals: a few tries once it had worked, none before.
            return hasHeldTheMount ? .clientError : nil
        }
    }

    /// One line a user can act on, for each way the server says no.
    static func error(for failure: ShoutConnection.ShoutError, target: String) -> AirtapError {
        let reason = switch failure.kind {
        case .cannotConnect: "cannot connect to the server (\(failure.detail))"
        case .loginRefused: "the server refused the source login: a wrong password, or the mount is already in use (\(failure.detail))"
        case .disconnected: "the server closed the source connection (\(failure.detail))"
        case .configuration: failure.detail
        }
        return .network(url: target, reason: reason)
    }
}
