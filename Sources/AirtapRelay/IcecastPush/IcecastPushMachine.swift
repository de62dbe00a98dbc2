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
    /// false: a first connection that fails (a wrong address or password) ends it at once.
    let policy: ReconnectPolicy
    let target: String
    private var progress = ReconnectPolicy.Progress()
    /// Once the mount has been ours, a refused login is the server's passing state (Icecast
    /// holds a dropped source's mount until it notices the drop), not a wrong password.
    private var hasHeldTheMount = false

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
        let error = Self.error(for: failure, target: target)
        guard state != .stopped, hasHeldTheMount || policy.retriesBeforeFirstAudio else {
            state = .stopped
            return .stop(error)
        }
        // A setting libshout refused, or a login refused before the mount was ever ours (a wrong
        // password), rarely heals: the policy gives it few tries. A lost or refused connection is
        // the server's passing state.
        let kind: ReconnectPolicy.Failure = switch failure.kind {
        case .configuration: .clientError
        case .loginRefused: hasHeldTheMount ? .transient : .clientError
        case .cannotConnect, .disconnected: .transient
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
