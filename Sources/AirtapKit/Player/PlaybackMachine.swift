/// The player's state and every rule that changes it: inputs in, one action out. No I/O and
/// no clock, so each rule is tested on its own (`PlaybackMachineTests`).
struct PlaybackMachine {
    enum Action: Sendable, Hashable {
        case none
        /// Start the device: what was written to it is heard from now on.
        case play
        /// The device ran dry before: bring it back (`snd_pcm_recover`), then start it.
        case recoverAndPlay
        case pauseDevice
        case resumeDevice
        /// Discard what the device holds and end.
        case stop(StopReason)
    }

    /// Why the player is waiting for audio; it decides how playback resumes.
    private enum Refill {
        case firstStart
        case afterUnderrun
    }

    private(set) var state = PlayerState.connecting
    private(set) var underruns = 0
    let bufferSeconds: Double
    private var refill = Refill.firstStart
    private var reconnectAttempt: Int?
    /// What to return to when a pause ends.
    private var beforePause: PlayerState?

    init(bufferSeconds: Double) {
        self.bufferSeconds = bufferSeconds
    }

    /// The station's connection changed (the session tells the player).
    mutating func connection(_ connection: ConnectionState) -> Action {
        switch connection {
        case .reconnecting(let attempt, _, _):
            reconnectAttempt = attempt
            if case .buffering = state, refill == .afterUnderrun { transition(to: .reconnecting(attempt: attempt)) }
        case .streaming:
            reconnectAttempt = nil
            if case .reconnecting = state { transition(to: .buffering(percent: 0)) }
        case .idle, .connecting, .stopped:
            break
        }
        return .none
    }

    /// The audio waiting to be heard (queued, and written to the device but not started), while
    /// waiting for audio. `complete`: the stream's end is queued, so no more audio will come and
    /// what is there plays at once.
    mutating func queued(seconds: Double, complete: Bool) -> Action {
        switch state {
        case .connecting, .buffering, .reconnecting:
            if (seconds > 0 && seconds >= bufferSeconds) || (complete && seconds > 0) || (complete && refill == .firstStart) {
                transition(to: .playing)
                return refill == .afterUnderrun ? .recoverAndPlay : .play
            }
            if seconds > 0 || state != .connecting {
                if case .reconnecting = state, seconds == 0 { return .none }
                let percent = Int(min(99, (seconds / max(bufferSeconds, 0.001) * 100).rounded(.down)))
                transition(to: .buffering(percent: percent))
            }
            return .none
        case .playing, .paused, .stopped:
            return .none
        }
    }

    /// The device ran dry while playing (the queue was empty, or the player was late): count it,
    /// and wait for a full buffer.
    mutating func ranDry() -> Action {
        guard case .playing = state else { return .none }
        underruns += 1
        refill = .afterUnderrun
        if let reconnectAttempt {
            transition(to: .reconnecting(attempt: reconnectAttempt))
        } else {
            transition(to: .buffering(percent: 0))
        }
        return .none
    }

    mutating func togglePause() -> Action {
        switch state {
        case .paused:
            let previous = beforePause ?? .playing
            beforePause = nil
            transition(to: previous)
            return previous == .playing ? .resumeDevice : .none
        case .playing, .buffering, .connecting, .reconnecting:
            beforePause = state
            transition(to: .paused)
            return .pauseDevice
        case .stopped:
            return .none
        }
    }

    /// The end: the stream's end was played out, the user quit, a limit or an error.
    mutating func finish(_ reason: StopReason) -> Action {
        if case .stopped = state { return .none }
        transition(to: .stopped(reason))
        return .stop(reason)
    }

    /// The one place the state changes.
    private mutating func transition(to next: PlayerState) {
        state = next
    }
}
