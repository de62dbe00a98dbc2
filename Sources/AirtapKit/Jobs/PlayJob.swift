import ALSAPlayback
import FoundationEssentials
import CurlSource
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

    /// What `run` waits for: the player's end, a move to another station, or the failure of a
    /// station a move reached (`tuning` says which, so a station already left is no matter;
    /// `wasRecording`: whether it was being recorded, so the next one is).
    private enum Turn: Sendable {
        case playerStopped(StopReason)
        case move(forward: Bool)
        /// MPRIS Stop: the station is disconnected, the player waits.
        case standBy
        /// MPRIS Play (`toggles`: PlayPause): after a Stop it connects the station again.
        case play(toggles: Bool)
        case stationFailed(tuning: Int, error: AirtapError, forward: Bool, wasRecording: Bool)
    }

    /// Plays until the limit, q, a signal or the end of the stream; throws how it failed (an
    /// `AirtapError`, or what the recording could not start with). Next and Previous change the
    /// station: its session and the sinks bound to it (recording, song keeper, `--json` events)
    /// are replaced; the player, the device, the terminal and the bus connection stay. A station
    /// a move reached that fails before any of its audio (its retries spent) is passed over in
    /// the same direction, as a playlist player passes over an entry it cannot open; at the end
    /// of the list its error ends `play`. Any other failure ends `play`, as with one station.
    package func run() async throws {
        let logger = logger
        let onTerminal = plan.onTerminal
        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        let log = PlayLog(logger: logger)
        let desktop = Locked<DesktopSession?>(nil)
        let onChange: @Sendable (PlayerStatus) -> Void = { status in
            if !onTerminal { log.record(status) }
            desktop.withLock { $0 }?.playerChanged(status)
        }
        let rest = NetworkRest()
        let player = Player(configuration: plan.player, logger: logger, onChange: onChange,
                            onDevice: { rest.playerReports($0) })
        loop.setRestLength { rest.length(queuedSeconds: { player.queuedSeconds }) }
        // Opens the device first: a missing one fails at once (exit 3), before connecting.
        try player.start()

        let recording = try plan.recording.openingLibrary(logger: logger)
        let machine = plan.json ? MachineOutput() : nil
        var dial = plan.dial
        let tuned = Locked(try tune(dial.current, player: player, loop: loop, rest: rest, recording: recording,
                                    machine: machine, onFailure: nil))
        let started = ContinuousClock.now
        if plan.records { _ = try tuned.withLock { $0 }.recordingSwitch.startRecording() }

        let (turns, turn) = AsyncStream.makeStream(of: Turn.self)
        let stopAll: @Sendable (StopReason) -> Void = { reason in
            tuned.withLock { $0 }.session.stop(reason)
            player.stop(reason)
        }
        // The run owns the signals and the limit; the sessions come and go with the station, and
        // once the run is told to stop no move starts another.
        let run = StationRun(sessions: [], loop: loop, signals: SignalTrap.stopSignals + [SIGQUIT], stop: stopAll)
        run.start(limit: plan.seconds)
        tuned.withLock { $0 }.session.start()
        let clicks = DirectoryClicks(loop: loop, environment: ProcessInfo.processInfo.environment, logger: logger)
        clicks.started([dial.current])
        let desktopSession = DesktopSession.start(
            address: plan.sessionBusAddress, features: plan.desktop, dial: dial,
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
        desktop.withLock { $0 = desktopSession }

        var terminal: PlayTerminal?
        if onTerminal {
            let controls = PlayControls(player: player, current: { tuned.withLock { ($0.recordingSwitch, $0.keeper) } },
                                        moveStation: { turn.yield(.move(forward: $0)) })
            terminal = PlayTerminal(stationName: { tuned.withLock { $0.station.name } }, player: player, controls: controls,
                                    isRecording: { tuned.withLock { $0 }.recordingSwitch.isRecording },
                                    quit: { run.stop(.userRequest) })
        }
        Task {
            turn.yield(.playerStopped(await player.stopped()))
            turn.finish()
        }
        /// Stations tuned so far: the current one's number.
        var tuning = 0
        /// After MPRIS Stop, the station is disconnected until Play: whether it was being recorded
        /// (nil: not stopped).
        var standingBy: Bool?
        /// Moves to the next station in that direction; false when there is none (or a stop came).
        /// `recording`: whether the next is recorded (nil: if the station left was). Standing by,
        /// only the dial moves: Play connects the station it shows.
        func change(forward: Bool, recording records: Bool? = nil) async -> Bool {
            var target = dial
            guard !run.isStopping, target.move(forward: forward) else { return false }
            if standingBy != nil {
                dial = target
                logger.notice("station: \(dial.current.name) (stopped: Play starts it)")
                desktopSession?.tuned(to: dial)
                return true
            }
            let number = tuning + 1
            let next: Tuning
            do {
                next = try tune(target.current, player: player, loop: loop, rest: rest, recording: recording,
                                machine: machine) {
                    error, wasRecording in
                    turn.yield(.stationFailed(tuning: number, error: error, forward: forward, wasRecording: wasRecording))
                }
            } catch {
                logger.error("cannot play \(target.current.name): \(error)")
                return false
            }
            dial = target
            tuning = number
            // The keys act on the next station from here on (r and s never reach sinks being
            // retired), and a stop meanwhile stops it before it starts.
            let old = tuned.withLock { tuned in
                defer { tuned = next }
                return tuned
            }
            let wasRecording = records ?? old.recordingSwitch.isRecording
            await old.stop()
            player.changeStation()
            if !run.isStopping {
                logger.notice("station: \(dial.current.name)")
                if wasRecording {
                    do { try next.recordingSwitch.startRecording() } catch { logger.error("recording stopped: \(error)") }
                }
                next.session.start()
                clicks.started([dial.current])
                desktopSession?.tuned(to: dial)
            }
            // The old station's files are completed while the next one connects.
            old.finishSinks()
            return true
        }

        /// MPRIS Stop: the station's session and sinks end as when leaving it; the player stays.
        func standBy() async {
            guard standingBy == nil, !run.isStopping else { return }
            let current = tuned.withLock { $0 }
            standingBy = current.recordingSwitch.isRecording
            await current.stop()
            player.standBy()
            current.finishSinks()
            logger.notice("stopped: \(dial.current.name) is disconnected until Play")
        }
        /// MPRIS Play after a Stop: the station on the dial again, as at the start (its failure
        /// before any audio ends `play`, as the first station's does).
        func resume() {
            guard let wasRecording = standingBy, !run.isStopping else { return }
            let next: Tuning
            do {
                next = try tune(dial.current, player: player, loop: loop, rest: rest, recording: recording,
                                machine: machine, onFailure: nil)
            } catch {
                logger.error("cannot play \(dial.current.name): \(error)")
                return
            }
            standingBy = nil
            tuning += 1
            tuned.withLock { $0 = next }
            player.resume()
            logger.notice("station: \(dial.current.name)")
            if wasRecording {
                do { try next.recordingSwitch.startRecording() } catch { logger.error("recording stopped: \(error)") }
            }
            next.session.start()
            clicks.started([dial.current])
        }

        var reason = StopReason.userRequest
        turning: for await next in turns {
            switch next {
            case .playerStopped(let stopped):
                reason = stopped
                break turning
            case .move(let forward):
                _ = await change(forward: forward)
            case .standBy:
                await standBy()
            case .play(let toggles):
                if standingBy != nil {
                    resume()
                } else {
                    (toggles ? MPRISAction.playPause : .play).perform(on: player, quit: {})
                }
            case .stationFailed(let failed, let error, let forward, let wasRecording):
                // A stop meanwhile (q, a signal, the limit) is the end, not a failure to pass over.
                guard failed == tuning, !run.isStopping else { continue }
                logger.error("cannot play \(dial.current.name): \(error)")
                if !(await change(forward: forward, recording: wasRecording)), !run.isStopping {
                    player.stop(.error(error))
                }
            }
        }
        terminal?.stop()
        terminal = nil
        let last = tuned.withLock { $0 }
        // Standing by, the station was left already.
        if standingBy == nil { await last.leave() }
        run.finish()
        if let machine {
            machine.writer.emit(.stop(reason, seconds: (ContinuousClock.now - started).seconds, station: last.station))
        }
        let status = player.status
        logger.info("stopped: \(reason)", metadata: [
            "underruns": "\(status.underruns)", "dropped packets": "\(status.droppedPackets)",
            "seconds": "\(status.heardSeconds.formatted(decimals: 1))",
        ])
        if case .error(let error) = reason { throw error }
    }

    /// One station's share of `play`: its session, and the sinks bound to the station.
    private struct Tuning: Sendable {
        let station: Station
        let session: StationSession
        /// The player's feed for this session; shut before the session stops, so its end does
        /// not end the player when another station follows.
        let gate: StationGate
        let recordingSwitch: RecordingSwitch
        let keeper: SongKeeper
        let events: QueuedSink?

        /// Stops the session and completes what was bound to it: the recording, saves of songs,
        /// the events written.
        func leave() async {
            await stop()
            finishSinks()
        }

        /// Stops the session: once this returns, nothing more of it reaches any sink.
        func stop() async {
            gate.shut()
            session.stop(.userRequest)
            _ = await session.stopped()
        }

        func finishSinks() {
            recordingSwitch.stopRecording(.userRequest)
            keeper.finish()
            events?.drain()
        }
    }

    /// `onFailure`: where the station's failure before any audio goes instead of the player (nil:
    /// to the player, which ends `play` with it), with whether it was being recorded.
    private func tune(_ station: Station, player: Player, loop: CurlMultiLoop, rest: NetworkRest,
                      recording: RecordingPlan, machine: MachineOutput?,
                      onFailure: (@Sendable (AirtapError, Bool) -> Void)?) throws -> Tuning {
        let recordingSwitch = makeRecordingSwitch(recording, station: station, rest: rest)
        // The keeper only keeps packets until a song is saved: it runs on the ingest thread.
        let keeper = try makeSongKeeper(recording, station: station)
        let events = machine?.sink(for: station, emitsStop: false)
        // The gate comes before the recording switch, which the failure's end switches off.
        var failure: (@Sendable (AirtapError) -> Void)?
        if let onFailure { failure = { error in onFailure(error, recordingSwitch.isRecording) } }
        let gate = StationGate(player.feed, onFailure: failure)
        // The keeper first: a title the player shows is kept already.
        var sinks: [any StreamSink] = [keeper, gate, recordingSwitch]
        if let events { sinks.append(events) }
        let session = StationSession(
            station: station, loop: loop, options: plan.connection.ingestOptions(for: station, reconnects: true),
            sinks: sinks, logger: logger)
        return Tuning(station: station, session: session, gate: gate, recordingSwitch: recordingSwitch, keeper: keeper,
                      events: events)
    }

    /// `--record` and the r key: per track (or one file with --single), like `record`.
    private func makeRecordingSwitch(_ recording: RecordingPlan, station: Station, rest: NetworkRest) -> RecordingSwitch {
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
    private func makeSongKeeper(_ recording: RecordingPlan, station: Station) throws(AirtapError) -> SongKeeper {
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
