import AirtapPlayback
import AirtapRecording
import Synchronization

/// How long `play`'s network loop rests after a read (`CurlMultiLoop.setRestLength`): decided as
/// the rest begins, from the audio waiting then (the queue, with what that read brought, and
/// what the device still holds), by `PlaybackMachine.networkSlack`; held to
/// `RecordingPlan.longestNetworkRest` while a recording runs, as `record` rests, so a kill costs
/// the recording no more. A rest that began before a recording started ends as it was set: the
/// recording takes the stream from its next packet anyway.
final class NetworkRest: Sendable {
    private let state = Mutex(State())

    private struct State {
        var device = PlayerDevice(allowsRest: false, heldSeconds: 0, isPlaying: false)
        var reportedAt = ContinuousClock.now
        var recordings = 0
    }

    package init() {}

    /// The player's report at each wake-up (on its thread).
    package func playerReports(_ device: PlayerDevice, at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.device = device
            state.reportedAt = now
        }
    }

    package func recordingStarted() {
        state.withLock { $0.recordings += 1 }
    }

    package func recordingEnded() {
        state.withLock { $0.recordings -= 1 }
    }

    /// The rest to take now, with `queuedSeconds()` waiting in the player's queue. The device has
    /// played on since the player's last report, so what it held then counts less by that time.
    /// The queue is read after the report: audio the player takes meanwhile is then counted in
    /// neither (a shorter rest), never in both.
    package func length(queuedSeconds: () -> Double, at now: ContinuousClock.Instant = .now) -> Duration {
        let (device, reportedAt, recordings) = state.withLock { ($0.device, $0.reportedAt, $0.recordings) }
        guard device.allowsRest else { return .zero }
        let played = device.isPlaying ? max(0, reportedAt.duration(to: now).seconds) : 0
        let waiting = queuedSeconds() + max(0, device.heldSeconds - played)
        let slack = Duration.milliseconds(Int((PlaybackMachine.networkSlack(waitingSeconds: waiting) * 1000).rounded()))
        return recordings > 0 ? min(slack, RecordingPlan.longestNetworkRest) : slack
    }
}
