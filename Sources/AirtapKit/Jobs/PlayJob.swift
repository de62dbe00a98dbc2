import ALSAPlayback
import CurlSource
import Glibc
import Locking
import Logging

/// `play`: one station through ALSA, with keys and a status line on a terminal; it can record
/// while it plays (`--record`, the r key) and save the song playing (the s key).
package struct PlayPlan: Sendable {
    package var station: Station
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

    package init(station: Station) {
        self.station = station
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
    /// `AirtapError`, or what the recording could not start with).
    package func run() async throws {
        let station = plan.station
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
        let player = Player(configuration: plan.player, logger: logger, onChange: onChange,
                            onNetworkSlack: { loop.setBatching($0) })
        // Opens the device first: a missing one fails at once (exit 3), before connecting.
        try player.start()

        let recording = try plan.recording.openingLibrary(logger: logger)
        let recordingSwitch = makeRecordingSwitch(recording)
        let keeper = makeSongKeeper(recording)
        // The keeper's songs begin and end where a recording cuts (in the gap): it sees the
        // stream through the split aligner, which decodes around title changes, so off the
        // ingest thread, like a recorder. Nothing waits for it (a save it cannot start yet is
        // promised), so it takes its events a second at a time: fewer wake-ups than the player's.
        let keeperFeed = QueuedSink(try plan.recording.aligned(keeper, for: station, logger: logger), label: "play.keeper",
                                    coalescing: 1, target: .global(qos: .utility))

        let machine = plan.json ? MachineOutput() : nil
        let events = machine?.sink(for: station, emitsStop: false)
        var sinks: [any StreamSink] = [player.feed, recordingSwitch, keeperFeed]
        if let events { sinks.append(events) }
        let session = StationSession(
            station: station, loop: loop, options: plan.connection.ingestOptions(for: station, reconnects: true),
            sinks: sinks, logger: logger)
        let started = ContinuousClock.now
        if plan.records { _ = try recordingSwitch.startRecording() }

        let stopAll: @Sendable (StopReason) -> Void = { reason in
            session.stop(reason)
            player.stop(reason)
        }
        let run = StationRun(sessions: [session], loop: loop, signals: SignalTrap.stopSignals + [SIGQUIT], stop: stopAll)
        run.start(limit: plan.seconds)
        let desktopSession = DesktopSession.start(
            address: plan.sessionBusAddress, features: plan.desktop, station: station,
            status: player.status, loop: loop, logger: logger) { action in
                action.perform(on: player, quit: { run.stop(.userRequest) })
            }
        desktop.withLock { $0 = desktopSession }

        var terminal: PlayTerminal?
        if onTerminal {
            let controls = PlayControls(player: player, recordingSwitch: recordingSwitch, keeper: keeper)
            terminal = PlayTerminal(station: station, player: player, controls: controls, recordingSwitch: recordingSwitch,
                                    quit: { run.stop(.userRequest) })
        }
        let reason = await player.stopped()
        terminal?.stop()
        terminal = nil
        session.stop(StopReason.userRequest)
        _ = await run.stopped()
        run.finish()
        recordingSwitch.stopRecording(StopReason.userRequest)
        keeperFeed.drain()
        keeper.finish()
        if let machine, let events {
            events.drain()
            machine.writer.emit(.stop(reason, seconds: (ContinuousClock.now - started).seconds, station: station))
        }
        let status = player.status
        logger.info("stopped: \(reason)", metadata: [
            "underruns": "\(status.underruns)", "dropped packets": "\(status.droppedPackets)",
            "seconds": "\(status.heardSeconds.formatted(decimals: 1))",
        ])
        if case .error(let error) = reason { throw error }
    }

    /// `--record` and the r key: per track (or one file with --single), like `record`.
    private func makeRecordingSwitch(_ recording: RecordingPlan) -> RecordingSwitch {
        let station = plan.station
        let logger = logger
        return RecordingSwitch {
            let plan = try recording.creatingOutputDirectory()
            let locks = try plan.lock([station], logger: logger)
            let recorder = try plan.makeRecorder(for: station, logger: logger, coalescing: 0.25) { reason in
                // --max-size or a disk error ends the recording, not the playing.
                logger.notice("recording stopped: \(reason)")
            }
            return RecordingSwitch.Recording(sink: recorder.writer) { withExtendedLifetime(locks) {} }
        }
    }

    /// The s key: the song playing, from its beginning, into a file of its own.
    private func makeSongKeeper(_ recording: RecordingPlan) -> SongKeeper {
        // A saved song is one file even when --single was given for --record, and kept whatever
        // the keep and skip lists say: the listener asked for it.
        var station = plan.station
        station.keepOnly = nil
        station.skip = nil
        // A save is never refused as a duplicate either; it joins the index all the same.
        var recording = recording
        recording.singleFile = nil
        recording.keepRule = KeepRule()
        recording.openLibrary = recording.openLibrary?.indexingOnly
        let logger = logger
        return SongKeeper { [recording, station] wholeTrack in
            let plan = try recording.creatingOutputDirectory()
            let recorder = try plan.makeRecorder(for: station, logger: logger, alignsCuts: false, coalescing: 0.25) { _ in }
            if wholeTrack { recorder.tracks?.startsAtTrackBoundary() }
            return recorder.writer
        }
    }
}
