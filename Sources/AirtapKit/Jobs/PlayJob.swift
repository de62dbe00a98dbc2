import ALSAPlayback
import AirtapIngest
import AirtapPlayback
import AirtapRecording
import AirtapStations
import AirtapSupport
import CurlSource
import FoundationEssentials
import Glibc
import Locking
import Logging
import Synchronization

/// `play`: one station through ALSA, with keys and a status line on a terminal; it can record
/// while it plays (`--record`, the r key) and save the song playing (the s key).
package struct PlayPlan: Sendable {
    /// The station to play first, and those Next and Previous move to.
    package var dial: StationDial
    package var connection = ConnectionPlan()
    package var player = PlayerConfiguration()
    package var seconds: Double?
    /// `--record`: recording from the start.
    package var records = false
    /// Where `--record`, r and s write.
    package var recording = RecordingPlan(outputDirectory: "recordings")
    package var json = false
    /// MPRIS2 media controls on the session bus (`--no-mpris` turns them off) and a desktop
    /// notification at each title heard (`--notify`).
    package var desktop = DesktopSession.Features(mpris: true, notify: false)
    /// The session bus (`DBUS_SESSION_BUS_ADDRESS`); nil: no desktop controls.
    package var sessionBusAddress = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) }
    /// Keys and the status line (stdin and stderr are a terminal); else log lines.
    package var onTerminal = Terminal.isInteractive

    package init(dial: StationDial) {
        self.dial = dial
    }

    package init(station: Station) {
        self.init(dial: StationDial(station: station))
    }
}

package struct PlayJob: Sendable {
    package let plan: PlayPlan
    package let logger: Logger

    package init(plan: PlayPlan, logger: Logger) {
        self.plan = plan
        self.logger = logger
    }

    /// `--device help`: the PCM names ALSA knows, one a line.
    package static func listDevices() {
        for known in PCMOutput.knownDevices() {
            Terminal.output(known.description.isEmpty ? known.name : "\(known.name)\t\(known.description)")
        }
    }

    /// Plays until the limit, q, a signal or the end of the stream; throws how it failed (an
    /// `AirtapError`, or what the recording could not start with). Next and Previous change the
    /// station: its session and the sinks bound to it (recording, song keeper, `--json` events)
    /// are replaced; the player, the device, the terminal and the bus connection stay. A station
    /// a move reached that fails before any of its audio (its retries spent) is passed over in
    /// the same direction, as a playlist player passes over an entry it cannot open; at the end
    /// of the list its error ends `play`. Any other failure ends `play`, as with one station.
    package func run() async throws {
        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        let desktop = Locked<DesktopSession?>(nil)
        let rest = NetworkRest()
        let player = makePlayer(rest: rest, desktop: desktop)
        loop.setRestLength { rest.length(queuedSeconds: { player.queuedSeconds }) }
        // Opens the device first: a missing one fails at once (exit 3), before connecting.
        try player.start()

        let tuner = PlayTuner(job: self, player: player, loop: loop, rest: rest,
                              recording: try plan.recording.openingLibrary(logger: logger),
                              machine: plan.json ? MachineOutput() : nil)
        let tuned = Locked(try tuner.tune(plan.dial.current, onFailure: nil))
        let started = ContinuousClock.now
        if plan.records { _ = try tuned.withLock { $0 }.recordingSwitch.startRecording() }

        let (turns, turn) = AsyncStream.makeStream(of: PlayTurn.self)
        // The run owns the signals and the limit; the sessions come and go with the station, and
        // once the run is told to stop no move starts another.
        let run = StationRun(sessions: [], loop: loop, signals: SignalTrap.stopSignals + [SIGQUIT]) { reason in
            tuned.withLock { $0 }.session.stop(reason)
            player.stop(reason)
        }
        run.start(limit: plan.seconds)
        tuned.withLock { $0 }.session.start()
        let clicks = DirectoryClicks(loop: loop, environment: ProcessInfo.processInfo.environment, logger: logger)
        clicks.started([plan.dial.current])
        let desktopSession = startDesktop(player: player, loop: loop, run: run, turn: turn)
        desktop.withLock { $0 = desktopSession }

        var terminal = plan.onTerminal ? makeTerminal(player: player, tuned: tuned, run: run, turn: turn) : nil
        Task {
            turn.yield(.playerStopped(await player.stopped()))
            turn.finish()
        }
        var stations = PlayStations(tuner: tuner, tuned: tuned, run: run, clicks: clicks, desktop: desktopSession,
                                    turn: turn, dial: plan.dial)
        var reason = StopReason.userRequest
        for await next in turns {
            if let stopped = await stations.take(next) {
                reason = stopped
                break
            }
        }
        terminal?.stop()
        terminal = nil
        let last = tuned.withLock { $0 }
        // Standing by, the station was left already.
        if stations.standingBy == nil { await last.leave() }
        run.finish()
        tuner.machine?.writer.emit(.stop(reason, seconds: (ContinuousClock.now - started).seconds, station: last.station))
        logStop(reason, status: player.status)
        if case .error(let error) = reason { throw error }
    }

    /// The player; off a terminal its changes are log lines, and the desktop hears of them.
    private func makePlayer(rest: NetworkRest, desktop: Locked<DesktopSession?>) -> Player {
        let onTerminal = plan.onTerminal
        let log = PlayLog(logger: logger)
        let onChange: @Sendable (PlayerStatus) -> Void = { status in
            if !onTerminal { log.record(status) }
            desktop.withLock { $0 }?.playerChanged(status)
        }
        return Player(configuration: plan.player, logger: logger, onChange: onChange,
                      onDevice: { rest.playerReports($0) })
    }

    /// The media controls on the session bus: the station moves and Stop and Play are turns of
    /// the run, the rest acts on the player.
    private func startDesktop(player: Player, loop: CurlMultiLoop, run: StationRun,
                              turn: AsyncStream<PlayTurn>.Continuation) -> DesktopSession? {
        DesktopSession.start(
            address: plan.sessionBusAddress, features: plan.desktop, dial: plan.dial,
            status: player.status, loop: loop, logger: logger) { action in
                switch action {
                case .next: turn.yield(.move(forward: true))
                case .previous: turn.yield(.move(forward: false))
                case .stop: turn.yield(.standBy)
                case .play: turn.yield(.play(toggles: false))
                case .playPause: turn.yield(.play(toggles: true))
                default: action.perform(on: player, quit: { run.stop(.userRequest) })
                }
            }
    }

    /// The keys and the status line; they act on whichever station is tuned when pressed.
    private func makeTerminal(player: Player, tuned: Locked<PlayTuning>, run: StationRun,
                              turn: AsyncStream<PlayTurn>.Continuation) -> PlayTerminal {
        let controls = PlayControls(player: player, current: { tuned.withLock { ($0.recordingSwitch, $0.keeper) } },
                                    moveStation: { turn.yield(.move(forward: $0)) })
        return PlayTerminal(stationName: { tuned.withLock { $0.station.name } }, player: player, controls: controls,
                            isRecording: { tuned.withLock { $0 }.recordingSwitch.isRecording },
                            quit: { run.stop(.userRequest) })
    }

    private func logStop(_ reason: StopReason, status: PlayerStatus) {
        logger.info("stopped: \(reason)", metadata: [
            "underruns": "\(status.underruns)", "dropped packets": "\(status.droppedPackets)",
            "seconds": "\(status.heardSeconds.formatted(decimals: 1))",
        ])
    }

    /// `--record` and the r key: per track (or one file with --single), like `record`.
    func makeRecordingSwitch(_ recording: RecordingPlan, station: Station, rest: NetworkRest) -> RecordingSwitch {
        let logger = logger
        return RecordingSwitch {
            let plan = try recording.creatingOutputDirectory()
            let locks = try plan.lock([station], logger: logger)
            // Between the network's rests a quarter second gathers the per-read handovers. What a
            // rest of 0.42 s or more brings (16 packets of 44.1 kHz MP3) goes to disk at once, and
            // a shorter one waits out the quarter second: a kill loses at most about a second of
            // audio, as with `record`: while it records, the network rests up to 1 s.
            let recorder = try plan.makeRecorder(for: station, logger: logger, coalescing: 0.25, batch: 16) { reason in
                // --max-size or a disk error ends the recording, not the playing.
                logger.notice("recording stopped: \(reason)")
            }
            rest.recordingStarted()
            return RecordingSwitch.Recording(sink: recorder.writer) {
                rest.recordingEnded()
                withExtendedLifetime(locks) {}
            }
        }
    }

    /// The s key: the song playing, from its beginning, into a file of its own.
    func makeSongKeeper(_ recording: RecordingPlan, station: Station) throws(AirtapError) -> SongKeeper {
        // A saved song is one file even when --single was given for --record, and kept whatever
        // the keep and skip lists say: the listener asked for it.
        var station = station
        station.keepOnly = nil
        station.skip = nil
        // A save is never refused as a duplicate either; it joins the index all the same.
        var recording = recording
        recording.singleFile = nil
        recording.keepRule = KeepRule()
        recording.openLibrary = recording.openLibrary?.indexingOnly
        let logger = logger
        let cutSearch = SongKeeper.CutSearch(try recording.splitOptions(for: station),
                                             journal: recording.titleDelayJournal(for: station), logger: logger)
        return SongKeeper(cutSearch: cutSearch) { [recording, station] wholeTrack in
            let plan = try recording.creatingOutputDirectory()
            let recorder = try plan.makeRecorder(for: station, logger: logger, alignsCuts: false, coalescing: 0.25) { _ in }
            if wholeTrack { recorder.tracks?.startsAtTrackBoundary() }
            return recorder.writer
        }
    }
}

/// Passes a session's events to the player until shut: the events of a station being left
/// (its end above all) must not reach a player that goes on with the next.
final class StationGate: StreamSink {
    private let target: any StreamSink
    private let isOpen = Atomic(true)
    /// Takes the session's failure instead of the player, when set and no audio came before it.
    private let onFailure: (@Sendable (AirtapError) -> Void)?
    /// Touched by the ingest thread only; atomic for the class to be Sendable.
    private let hasPassedAudio = Atomic(false)

    init(_ target: any StreamSink, onFailure: (@Sendable (AirtapError) -> Void)? = nil) {
        self.target = target
        self.onFailure = onFailure
    }

    func shut() { isOpen.store(false, ordering: .releasing) }

    func receive(_ event: StreamEvent) throws {
        guard isOpen.load(ordering: .acquiring) else { return }
        switch event {
        case .packet:
            if !hasPassedAudio.load(ordering: .relaxed) { hasPassedAudio.store(true, ordering: .relaxed) }
        case .ended(.error(let error)) where onFailure != nil && !hasPassedAudio.load(ordering: .relaxed):
            shut()
            onFailure?(error)
            return
        default:
            break
        }
        try target.receive(event)
    }
}
