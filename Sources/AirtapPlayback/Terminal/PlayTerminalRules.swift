import FoundationEssentials
import ICYWire
import Locking
import Logging

/// `play`'s status line on a terminal: state symbol, station, title, time heard, bitrate, buffer,
/// underruns, volume, recording and a notice, joined by " · ", made inert and cut to `width`
/// characters. A pure rendering, tested without a terminal.
enum PlayStatusLine {
    /// How many characters fit: one less than the terminal's columns, 119 when they are unknown.
    package static func width(columns: Int?) -> Int {
        columns.map { $0 - 1 } ?? 119
    }

    package static func render(stationName: String, status: PlayerStatus, recording: Bool, notice: String?,
                               width: Int) -> String {
        let symbol = switch status.state {
        case .playing, .draining: "▶"
        case .paused: "⏸"
        case .standingBy: "⏹"
        default: "…"
        }
        let seconds = Int(status.heardSeconds)
        var parts = ["\(symbol) \(stationName)"]
        if let title = status.title, !title.raw.isEmpty { parts.append(title.raw) }
        if status.state != .playing { parts.append(status.state.description) }
        parts.append("\(seconds / 60):\((seconds % 60).zeroPadded(width: 2))")
        if let bitrate = status.bitrate { parts.append("\(bitrate) kbps") }
        parts.append("buffer \(status.bufferedSeconds.formatted(decimals: 1)) s")
        if status.underruns > 0 { parts.append("underruns \(status.underruns)") }
        parts.append("vol \(status.volume)")
        if recording { parts.append("● REC") }
        if let notice { parts.append(notice) }
        return String(InertText.render(parts.joined(separator: " · ")).prefix(max(0, width)))
    }
}

/// What `play`'s keys do: each `PlayerKeyAction` performed on the player, the recording switch
/// and the song keeper, answered with the notice the status line shows for it.
package struct PlayControls: Sendable {
    package enum Outcome: Sendable, Hashable {
        /// Done; show this notice (nil: none, the status line shows the change itself).
        case notice(String?)
        /// Quit: the caller stops the run and reads no more keys.
        case quit
    }

    private let togglePause: @Sendable () -> Void
    private let changeVolume: @Sendable (Int) -> Void
    /// The track the player says is heard (`PlayerStatus.trackNumber`).
    private let heardTrack: @Sendable () -> Int
    /// The station playing's recording switch and song keeper (they change with the station).
    private let current: @Sendable () -> (recordingSwitch: RecordingSwitch, keeper: SongKeeper)
    private let moveStation: @Sendable (_ forward: Bool) -> Void

    package init(togglePause: @escaping @Sendable () -> Void, changeVolume: @escaping @Sendable (Int) -> Void,
                 heardTrack: @escaping @Sendable () -> Int,
                 current: @escaping @Sendable () -> (recordingSwitch: RecordingSwitch, keeper: SongKeeper),
                 moveStation: @escaping @Sendable (_ forward: Bool) -> Void = { _ in }) {
        self.togglePause = togglePause
        self.changeVolume = changeVolume
        self.heardTrack = heardTrack
        self.current = current
        self.moveStation = moveStation
    }

    package init(player: Player, current: @escaping @Sendable () -> (recordingSwitch: RecordingSwitch, keeper: SongKeeper),
                 moveStation: @escaping @Sendable (_ forward: Bool) -> Void) {
        self.init(togglePause: { player.togglePause() }, changeVolume: { player.changeVolume(by: $0) },
                  heardTrack: { player.status.trackNumber }, current: current, moveStation: moveStation)
    }

    package func perform(_ action: PlayerKeyAction) -> Outcome {
        switch action {
        case .togglePause:
            togglePause()
            return .notice(nil)
        case .changeVolume(let delta):
            changeVolume(delta)
            return .notice(nil)
        case .saveSong:
            return .notice(save())
        case .toggleRecording:
            return .notice(toggleRecording())
        case .moveStation(let forward):
            moveStation(forward)
            return .notice(nil)
        case .quit:
            return .quit
        }
    }

    private func save() -> String {
        do {
            switch try current().keeper.save(trackNumber: heardTrack()) {
            case .started(let info): return "saving \(info?.raw ?? "this song")"
            case .alreadySaving: return "already saving this song"
            case .unavailable: return "this song is no longer kept"
            }
        } catch {
            return "cannot save: \(error)"
        }
    }

    private func toggleRecording() -> String {
        let recordingSwitch = current().recordingSwitch
        if recordingSwitch.isRecording {
            recordingSwitch.stopRecording()
            return "recording stopped"
        }
        do {
            try recordingSwitch.startRecording()
            return "recording"
        } catch {
            return "cannot record: \(error)"
        }
    }
}

/// A message the status line shows for a few seconds ("saving …"). The time is passed in.
final class NoticeBoard: Sendable {
    /// How long a notice shows.
    package static let seconds: Double = 3
    private let value = Locked<(text: String, until: ContinuousClock.Instant)?>(nil)

    package init() {}

    package func show(_ text: String, at now: ContinuousClock.Instant = .now) {
        value.withLock { $0 = (text, now.advanced(by: .seconds(Self.seconds))) }
    }

    package func current(at now: ContinuousClock.Instant = .now) -> String? {
        value.withLock { value in
            guard let value, value.until > now else { return nil }
            return value.text
        }
    }
}

/// `play` not on a terminal: one log line per state or title change. Buffering's percentage
/// changes many times a second: a line when buffering starts, not per percent.
struct PlayLogFilter: Sendable {
    /// What changed since the last status.
    struct Changes: Sendable, Hashable {
        /// The new state, buffering with 0 percent for any buffering; nil when unchanged.
        package var state: PlayerState?
        /// The new title; nil when unchanged, or changed to none.
        package var title: TrackInfo?
    }

    private var lastState: PlayerState?
    private var lastTitle: String?

    package init() {}

    package mutating func changes(_ status: PlayerStatus) -> Changes {
        let phase: PlayerState = if case .buffering = status.state { .buffering(percent: 0) } else { status.state }
        let stateChanged = lastState != phase
        let titleChanged = lastTitle != status.title?.raw
        lastState = phase
        lastTitle = status.title?.raw
        return Changes(state: stateChanged ? phase : nil, title: titleChanged ? status.title : nil)
    }
}

/// `play` not on a terminal: the lines `PlayLogFilter` lets through, to the log.
package final class PlayLog: Sendable {
    package let logger: Logger
    private let filter = Locked(PlayLogFilter())

    package init(logger: Logger) {
        self.logger = logger
    }

    package func record(_ status: PlayerStatus) {
        let changes = filter.withLock { $0.changes(status) }
        if let state = changes.state {
            logger.info("\(state == .buffering(percent: 0) ? "buffering" : status.state.description)", metadata: [
                "underruns": "\(status.underruns)", "heard": "\(status.heardSeconds.formatted(decimals: 2))",
            ])
        }
        if let title = changes.title {
            logger.info("title: \(title.raw)", metadata: [
                "frames written": "\(status.framesWritten)", "frames heard": "\(status.framesHeard)",
            ])
        }
    }
}
