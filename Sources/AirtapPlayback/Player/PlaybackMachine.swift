import AirtapIngest
import AirtapSupport

/// The player's state and every rule that changes it: inputs in, one action out. No I/O and
/// no clock, so each rule is tested on its own (`PlayerLogicTests`); `PlayerEngine` only
/// reports what happened and what it sees, and performs the actions.
package struct PlaybackMachine {
    enum Action: Sendable, Hashable {
        case none
        /// Start the device: what was written to it is heard from now on.
        case play
        /// The device ran dry before: bring it back (`snd_pcm_recover`), then start it.
        case recoverAndPlay
        case pauseDevice
        case resumeDevice
        /// No more audio will come and all of it is written: let the device play out what it
        /// holds (a device that keeps time is drained; a paced one plays out by its clock).
        case drain
        /// Discard what the device holds and end (a key, a signal, an error).
        case stop(StopReason)
        /// Everything written was heard: end, with nothing to discard.
        case end(StopReason)
    }

    /// What the engine sees of its audio when it asks the machine what to do next.
    struct Observation: Sendable, Hashable {
        /// Audio waiting to be heard: queued, decoded but not written, written but not heard.
        var waitingSeconds: Double
        /// Decoded frames not written to the device yet.
        var stagedFrames: Int
        /// Frames written to the device and not heard yet.
        var delayFrames: Int
        /// The device is playing (started, not paused, not run dry).
        var deviceIsPlaying: Bool
        /// Nothing is queued.
        var queueIsEmpty: Bool
        /// The stream's end is queued: no more audio will come.
        var queueIsComplete: Bool
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
    /// The stream's end, once the player took it from the queue: nothing follows it.
    private var end: StopReason?

    init(bufferSeconds: Double) {
        self.bufferSeconds = bufferSeconds
    }

    /// How long the network may rest between reads (`NetworkRest`) while this much audio waits
    /// to be heard: half of what is beyond a margin, so the next batch lands with audio still
    /// waiting. Asked only while `allowsNetworkRest`: waiting for audio, the buffer fills as fast
    /// as the network brings it, and first audio is not delayed. A wake-up saved per rest is most
    /// of what playback costs once the decoder is fed.
    ///
    /// A connection that drops during a rest is noticed when the rest ends, so a rest longer
    /// than a second leaves `reconnectAllowance` waiting: the first retry comes within 1.2 s
    /// (`ReconnectPolicy`), and the server's burst refills the queue.
    package static func networkSlack(waitingSeconds: Double) -> Double {
        let half = max(0, (waitingSeconds - networkSlackMargin) / 2)
        let leavingRoom = max(1, waitingSeconds - reconnectAllowance)
        let slack = min(maximumNetworkSlack, half, leavingRoom)
        // A rest ends in a wake-up of its own: shorter than a station's usual write interval
        // (Icecast's and the test station's 100 ms ticks) it adds one per read, not saves any.
        return slack >= minimumNetworkSlack ? slack : 0
    }

    private static let maximumNetworkSlack = 2.0
    private static let minimumNetworkSlack = 0.25
    private static let networkSlackMargin = 0.1
    private static let reconnectAllowance = 1.5

    /// Rests are allowed at all: playing or paused with the buffer full.
    var allowsNetworkRest: Bool {
        switch state {
        case .playing, .paused: true
        case .connecting, .buffering, .reconnecting, .draining, .standingBy, .stopped: false
        }
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

    /// The player took the stream's end from the queue: what was written plays out, then it ends.
    mutating func streamEnded(_ reason: StopReason) -> Action {
        if end == nil { end = reason }
        return .none
    }

    /// What to do next, given what the engine sees: start the device once the buffer is full
    /// (at once when the stream has ended), notice a device that ran out of audio, play out the
    /// end, and end once it was heard.
    mutating func step(_ seen: Observation) -> Action {
        switch state {
        case .connecting, .buffering, .reconnecting:
            if let end, seen.stagedFrames == 0, seen.delayFrames == 0, seen.queueIsEmpty {
                // The end, with nothing left to hear.
                return finish(with: .end(end))
            }
            return queued(seconds: seen.waitingSeconds, complete: seen.queueIsComplete || end != nil)
        case .playing:
            if seen.deviceIsPlaying {
                guard let end, seen.stagedFrames == 0, seen.queueIsEmpty else { return .none }
                transition(to: .draining(end))
                return .drain
            }
            // Written but not playing: after a format change, or a device that could not pause.
            if seen.delayFrames > 0 { return .play }
            guard seen.stagedFrames == 0 else { return .none }
            // Played out: the end. Otherwise nothing was there to write before the device ran out.
            if let end { return finish(with: .end(end)) }
            return ranDry()
        case .draining(let reason):
            if seen.deviceIsPlaying { return .drain }
            if seen.delayFrames > 0 { return .play }
            return finish(with: .end(reason))
        case .paused, .standingBy, .stopped:
            return .none
        }
    }

    /// The audio waiting to be heard (queued, and written to the device but not started), while
    /// waiting for audio. `complete`: no more audio will come, so what is there plays at once.
    mutating func queued(seconds: Double, complete: Bool) -> Action {
        switch state {
        case .connecting, .buffering, .reconnecting:
            if (seconds > 0 && seconds >= bufferSeconds) || (complete && seconds > 0) || (complete && refill == .firstStart) {
                transition(to: end.map { .draining($0) } ?? .playing)
                return refill == .afterUnderrun ? .recoverAndPlay : .play
            }
            if seconds > 0 || state != .connecting {
                if case .reconnecting = state, seconds == 0 { return .none }
                let percent = Int(min(99, (seconds / max(bufferSeconds, 0.001) * 100).rounded(.down)))
                transition(to: .buffering(percent: percent))
            }
            return .none
        case .playing, .draining, .paused, .standingBy, .stopped:
            return .none
        }
    }

    /// The device ran dry while playing (the queue was empty, or the player was late): count it,
    /// and wait for a full buffer. Running out while draining is the end, which `step` decides.
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
            switch previous {
            case .playing, .draining: return .resumeDevice
            default: return .none
            }
        case .playing, .draining, .buffering, .connecting, .reconnecting:
            beforePause = state
            transition(to: .paused)
            return .pauseDevice
        case .standingBy, .stopped:
            return .none
        }
    }

    /// Another station: what the device held was discarded, and playback starts as at first,
    /// once the new station's buffer is full (a pause ends with it: the listener asked for sound).
    mutating func changeStation() -> Action {
        if case .stopped = state { return .none }
        startAfresh()
        // Standing by, the discarded audio was the stop's: Play is what starts the next.
        if state != .standingBy { transition(to: .connecting) }
        return .none
    }

    /// The listener stopped playback (MPRIS Stop): the station was disconnected and what the
    /// device held is discarded (a station change comes with it); the player stays, silent,
    /// until `resume`.
    mutating func standBy() -> Action {
        if case .stopped = state { return .none }
        startAfresh()
        transition(to: .standingBy)
        return .none
    }

    /// Play after a stop: the station connects again, and playback starts as at first.
    mutating func resume() -> Action {
        guard state == .standingBy else { return .none }
        transition(to: .connecting)
        return .none
    }

    private mutating func startAfresh() {
        refill = .firstStart
        reconnectAttempt = nil
        beforePause = nil
        end = nil
    }

    /// Stops at once: the user quit, a limit or an error. What the device holds is discarded.
    mutating func finish(_ reason: StopReason) -> Action {
        finish(with: .stop(reason))
    }

    private mutating func finish(with action: Action) -> Action {
        if case .stopped = state { return .none }
        switch action {
        case .stop(let reason), .end(let reason): transition(to: .stopped(reason))
        default: return .none
        }
        return action
    }

    /// The one place the state changes.
    private mutating func transition(to next: PlayerState) {
        state = next
    }
}
