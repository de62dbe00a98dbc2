import AirtapIngest
import AirtapPlayback
import AirtapRecording
import AirtapStations
import AirtapSupport
import CurlSource
import Locking
import Logging

/// What `play` waits for: the player's end, a move to another station, or the failure of a
/// station a move reached (`tuning` says which, so a station already left is no matter;
/// `wasRecording`: whether it was being recorded, so the next one is).
enum PlayTurn: Sendable {
    case playerStopped(StopReason)
    case move(forward: Bool)
    /// MPRIS Stop: the station is disconnected, the player waits.
    case standBy
    /// MPRIS Play (`toggles`: PlayPause): after a Stop it connects the station again.
    case play(toggles: Bool)
    case stationFailed(tuning: Int, error: AirtapError, forward: Bool, wasRecording: Bool)
}

/// The stations of one `play` run: which one the dial shows, which one is tuned (and its
/// number, so the failure of one already left is no matter), and the moves between them.
/// Owned by the run's loop over its turns: only that loop changes it.
struct PlayStations {
    let tuner: PlayTuner
    /// The station tuned, shared with the keys, the status line and the stop.
    let tuned: Locked<PlayTuning>
    let run: StationRun
    let clicks: DirectoryClicks
    let desktop: DesktopSession?
    let turn: AsyncStream<PlayTurn>.Continuation
    private(set) var dial: StationDial
    /// Stations tuned so far: the current one's number.
    private var tuning = 0
    /// After MPRIS Stop, the station is disconnected until Play: whether it was being recorded
    /// (nil: not stopped).
    private(set) var standingBy: Bool?

    init(tuner: PlayTuner, tuned: Locked<PlayTuning>, run: StationRun, clicks: DirectoryClicks,
         desktop: DesktopSession?, turn: AsyncStream<PlayTurn>.Continuation, dial: StationDial) {
        self.tuner = tuner
        self.tuned = tuned
        self.run = run
        self.clicks = clicks
        self.desktop = desktop
        self.turn = turn
        self.dial = dial
    }

    private var logger: Logger { tuner.job.logger }
    private var player: Player { tuner.player }

    /// Performs one turn; the player's end when it is one (the run stops waiting).
    mutating func take(_ next: PlayTurn) async -> StopReason? {
        switch next {
        case .playerStopped(let stopped):
            return stopped
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
            guard failed == tuning, !run.isStopping else { return nil }
            logger.error("cannot play \(dial.current.name): \(error)")
            if !(await change(forward: forward, recording: wasRecording)), !run.isStopping {
                player.stop(.error(error))
            }
        }
        return nil
    }

    /// Moves to the next station in that direction; false when there is none (or a stop came).
    /// `recording`: whether the next is recorded (nil: if the station left was). Standing by,
    /// only the dial moves: Play connects the station it shows.
    private mutating func change(forward: Bool, recording records: Bool? = nil) async -> Bool {
        var target = dial
        guard !run.isStopping, target.move(forward: forward) else { return false }
        if standingBy != nil {
            dial = target
            logger.notice("station: \(dial.current.name) (stopped: Play starts it)")
            desktop?.tuned(to: dial)
            return true
        }
        let number = tuning + 1
        let next: PlayTuning
        do {
            next = try tuner.tune(target.current) { [turn] error, wasRecording in
                turn.yield(.stationFailed(tuning: number, error: error, forward: forward, wasRecording: wasRecording))
            }
        } catch {
            logger.error("cannot play \(target.current.name): \(error)")
            return false
        }
        dial = target
        tuning = number
        await switchTo(next, recording: records)
        return true
    }

    /// The keys act on the next station from here on (r and s never reach sinks being retired),
    /// and a stop meanwhile stops it before it starts.
    private func switchTo(_ next: PlayTuning, recording records: Bool?) async {
        let old = tuned.withLock { tuned in
            defer { tuned = next }
            return tuned
        }
        let wasRecording = records ?? old.recordingSwitch.isRecording
        await old.stop()
        player.changeStation()
        if !run.isStopping {
            start(next, recording: wasRecording)
            desktop?.tuned(to: dial)
        }
        // The old station's files are completed while the next one connects.
        old.finishSinks()
    }

    private func start(_ next: PlayTuning, recording: Bool) {
        logger.notice("station: \(dial.current.name)")
        if recording {
            do { try next.recordingSwitch.startRecording() } catch { logger.error("recording stopped: \(error)") }
        }
        next.session.start()
        clicks.started([dial.current])
    }

    /// MPRIS Stop: the station's session and sinks end as when leaving it; the player stays.
    private mutating func standBy() async {
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
    private mutating func resume() {
        guard let wasRecording = standingBy, !run.isStopping else { return }
        let next: PlayTuning
        do {
            next = try tuner.tune(dial.current, onFailure: nil)
        } catch {
            logger.error("cannot play \(dial.current.name): \(error)")
            return
        }
        standingBy = nil
        tuning += 1
        tuned.withLock { $0 = next }
        player.resume()
        start(next, recording: wasRecording)
    }
}

/// One station's share of `play`: its session, and the sinks bound to the station.
struct PlayTuning: Sendable {
    let station: Station
    let session: any StationSource
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

/// What tuning a station needs, fixed for the whole run: the player, the loop, the network's
/// rests, where recordings and saved songs go, and the `--json` output.
struct PlayTuner: Sendable {
    let job: PlayJob
    let player: Player
    let loop: CurlMultiLoop
    let rest: NetworkRest
    let recording: RecordingPlan
    let machine: MachineOutput?

    /// `onFailure`: where the station's failure before any audio goes instead of the player (nil:
    /// to the player, which ends `play` with it), with whether it was being recorded.
    func tune(_ station: Station, onFailure: (@Sendable (AirtapError, Bool) -> Void)?) throws -> PlayTuning {
        let recordingSwitch = job.makeRecordingSwitch(recording, station: station, rest: rest)
        // The keeper only keeps packets until a song is saved: it runs on the ingest thread.
        let keeper = try job.makeSongKeeper(recording, station: station)
        let events = machine?.sink(for: station, emitsStop: false)
        // The gate comes before the recording switch, which the failure's end switches off.
        var failure: (@Sendable (AirtapError) -> Void)?
        if let onFailure { failure = { error in onFailure(error, recordingSwitch.isRecording) } }
        let gate = StationGate(player.feed, onFailure: failure)
        // The keeper first: a title the player shows is kept already.
        var sinks: [any StreamSink] = [keeper, gate, recordingSwitch]
        if let events { sinks.append(events) }
        var options = job.plan.connection.ingestOptions(for: station, reconnects: true)
        options.pacesLocalFiles = true
        let session = StationSources.make(station: station, loop: loop, options: options, sinks: sinks, logger: job.logger)
        return PlayTuning(station: station, session: session, gate: gate, recordingSwitch: recordingSwitch,
                          keeper: keeper, events: events)
    }
}
