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
///        +------------------------> waitingToRetry(at) <-------- (with --retries)
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

    enum FailureAction: Sendable, Hashable {
        case retry(attempt: Int, after: Double)
        case stop(AirtapError)
    }

    private(set) var state: State = .waitingForAudio
    /// nil: the first failure ends the relay (no --retries).
    let policy: ReconnectPolicy?
    let target: String
    private var progress = ReconnectPolicy.Progress()

    init(target: String, policy: ReconnectPolicy?) {
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
    }

    mutating func failed(_ failure: ShoutConnection.ShoutError, now: Double,
                         random: inout some RandomNumberGenerator) -> FailureAction {
        let streamedFor: Double = if case .streaming(let since) = state { now - since } else { 0 }
        let error = Self.error(for: failure, target: target)
        guard let policy, state != .stopped else {
            state = .stopped
            return .stop(error)
        }
        // A refused login (a wrong password, a mount in use) rarely heals: the policy gives it
        // few tries. A lost or refused connection is the server's passing state.
        let kind: ReconnectPolicy.Failure = failure.kind == .loginRefused || failure.kind == .configuration ? .clientError : .transient
        switch policy.decide(after: kind, streamedFor: streamedFor, progress: &progress, random: &random) {
        case .retry(let attempt, let delay):
            state = .waitingToRetry(at: now + delay)
            return .retry(attempt: attempt, after: delay)
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
