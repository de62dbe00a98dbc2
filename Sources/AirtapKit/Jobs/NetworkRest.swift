import Synchronization

/// How long `play`'s network loop rests between reads: what the player allows (half the audio
/// waiting ahead of the ear, up to 2 s), held to 1 s while a recording runs, so a kill costs the
/// recording no more than it costs `record`. A rest that began before a recording started ends
/// as it was set: the recording takes the stream from its next packet anyway.
package final class NetworkRest: Sendable {
    private let setBatching: @Sendable (Duration) -> Void
    private let state = Mutex(State())

    private struct State {
        var allowed = Duration.zero
        var recordings = 0
    }

    private static let whileRecording = Duration.seconds(1)

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
        setBatching(state.recordings > 0 ? min(state.allowed, Self.whileRecording) : state.allowed)
    }
}
