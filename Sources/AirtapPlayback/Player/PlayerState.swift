import AirtapSupport
import ICYWire

/// What the listener hears, as one value. Changed only by `PlaybackMachine`.
package enum PlayerState: Sendable, Hashable, CustomStringConvertible {
    /// Before the first audio arrived.
    case connecting
    /// Waiting until `--buffer` worth of audio is queued, at start or after running dry.
    case buffering(percent: Int)
    case playing
    /// The stream has ended and all of it is written: the device plays out what it holds, then
    /// the player stops for this reason.
    case draining(StopReason)
    case paused
    /// Ran dry while the station's connection is being re-established.
    case reconnecting(attempt: Int)
    /// Stopped by the listener (MPRIS Stop): the station is disconnected and nothing plays until
    /// Play connects it again. Unlike `stopped`, the player goes on.
    case standingBy
    case stopped(StopReason)

    package var description: String {
        switch self {
        case .connecting: "connecting"
        case .buffering(let percent): "buffering \(percent)%"
        case .playing: "playing"
        case .draining: "playing out"
        case .paused: "paused"
        case .reconnecting(let attempt): "reconnecting (attempt \(attempt))"
        case .standingBy: "stopped (Play starts it again)"
        case .stopped(let reason): "stopped: \(reason)"
        }
    }

    package var isStopped: Bool {
        if case .stopped = self { true } else { false }
    }
}

/// A snapshot for status lines, logs and tests.
package struct PlayerStatus: Sendable, Hashable {
    package var state: PlayerState = .connecting
    /// The title of the audio being heard (not of the audio just received).
    package var title: TrackInfo?
    /// Which title change the heard audio follows: 0 before the first title, then 1, 2, …
    /// (`SongKeeper` numbers tracks the same way).
    package var trackNumber = 0
    /// Seconds of audio heard so far.
    package var heardSeconds: Double = 0
    /// Frames written to the device, and frames of those already heard (written minus the device's delay).
    package var framesWritten = 0
    package var framesHeard = 0
    /// kbps of the last decoded frame.
    package var bitrate: Int?
    package var sampleRate: Int?
    package var channels: Int?
    /// Audio waiting to be heard: queued, and written to the device but not played yet.
    package var bufferedSeconds: Double = 0
    package var bufferTargetSeconds: Double = 1
    package var underruns = 0
    /// Packets dropped for playback because the device did not take them in time.
    package var droppedPackets = 0
    /// 0...100, the keys' and `--volume`'s scale (cubic).
    package var volume = 100
    /// The gain applied to the samples, as a linear amplitude factor (0...1): `volume`'s cube,
    /// or what was set directly (MPRIS's Volume).
    package var amplitude: Double = 1

    package init() {}

    /// Queue fill relative to `--buffer`, for the status line.
    package var bufferPercent: Int {
        guard bufferTargetSeconds > 0 else { return 100 }
        return Int(min(999, (bufferedSeconds / bufferTargetSeconds * 100).rounded()))
    }
}
