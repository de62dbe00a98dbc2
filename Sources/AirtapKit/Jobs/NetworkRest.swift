import Synchronization

/// How long `play`'s network loop rests between reads: what the player allows
/// (`PlaybackMachine.networkSlack`), held to `RecordingPlan.longestNetworkRest` while a recording
/// runs, as `record` rests, so a kill costs the recording no more. A rest that began before a
/// recording started ends as it was set: the recording takes the stream from its next packet anyway.
package final class NetworkRest: Sendable {
    private let setBatching: @Sendable (Duration) -> Void
    private let state = Mutex(State())

    private struct State {
        var allowed = Duration.zero
        var recordings = 0
    }

    /// `setBatching`: the loop's (`CurlMultiLoop.setBatching`), called with the lock held so
    /// calls from the player and from a recording's start and end land in order.
    package init(setBatching: @escaping @Sendable (Duration) -> Void) {
        self.setBatching = setBatching
    }

    package func playerAllows(_ slack: Duration) {
        state.withLock { state in
            state.allowed = slack
            apply(state)
        }
    }

    package func recordingStarted() {
        state.withLock { state in
            state.recordings += 1
            apply(state)
        }
    }

    package func recordingEnded() {
        state.withLock { state in
            state.recordings -= 1
            apply(state)
        }
    }

    private func apply(_ state: State) {
        setBatching(state.recordings > 0 ? min(state.allowed, RecordingPlan.longestNetworkRest) : state.allowed)
    }
}
