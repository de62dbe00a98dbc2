import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import CurlSource
import Logging

/// `serve`: stations relayed to HTTP/ICY listeners, one upstream connection each, optionally
/// recorded as well.
package struct ServePlan: Sendable {
    package var stations: [Station]
    package var listen = ListenAddress(host: "127.0.0.1", port: 8000)
    package var maxListeners = 64
    package var burstSeconds: Double = 2
    package var seconds: Double?
    /// `--record`: the stations recorded as well, by this plan.
    package var recording: RecordingPlan?
    package var connection = ConnectionPlan()
    /// `--library FILE` without `--record`: the library shown at `/recordings` (with `--record`,
    /// the library the recording adds to is shown, with its output folder).
    package var library: ServedLibrary?
    package var json = false

    package init(stations: [Station]) {
        self.stations = stations
    }
}

package struct ServeJob: Sendable {
    package let plan: ServePlan
    package let logger: Logger

    package init(plan: ServePlan, logger: Logger) {
        self.plan = plan
        self.logger = logger
    }

    /// Serves until the limit or a signal; throws the first station's error (the server ends
    /// with it), else a recording's.
    package func run() async throws(AirtapError) {
        let stations = plan.stations
        let logger = logger
        let recording = try plan.recording.map { plan throws(AirtapError) in try plan.creatingOutputDirectory().openingLibrary(logger: logger, defersIndexing: true) }
        let configuration = try relayConfiguration(recording: recording)
        let server = try await RelayServer.start(configuration, logger: logger)
        let address = plan.listen.display(host: server.host, port: server.port)
        let machine = plan.json ? MachineOutput() : nil
        if let machine {
            machine.writer.emit(.listening(address: address, url: "http://\(address)/stream", station: stations[0]))
        } else {
            Terminal.output("listening \(address)")
        }

        var locks: [RecordingLock] = []
        if let recording { locks = try recording.lock(stations, logger: logger) }
        // One bound on --on-track-done commands for the whole process, however many stations.
        let hooks = recording?.onTrackDone.map { TrackDoneHooks(command: $0, logger: logger) }
        defer { withExtendedLifetime(locks) {} }

        // One session per station for the whole run, reconnecting by itself: positions stay
        // contiguous and a reconnect's burst is spliced, so listeners hear neither repeated frames
        // nor a reset. All of them on one curl loop.
        // A quarter second: listeners are players, but a relay need not wake per network read.
        let loop = try CurlMultiLoop.forCommand(batching: .milliseconds(250))
        defer { loop.shutdown() }
        let (sessions, recorders, eventSinks) = try makeSessions(server: server, loop: loop, machine: machine,
                                                                 recording: recording, hooks: hooks)
        let run = StationRun(sessions: sessions, loop: loop)
        run.start(limit: plan.seconds)
        // The first station to fail ends the server; otherwise all end together at --for or a signal.
        let firstError = await run.stoppedAtFirstError()
        run.finish()
        server.drainTranscoders()
        await server.shutdown()
        for recorder in recorders { recorder.writer.drain() }
        recording?.openLibrary?.finishPending()
        await hooks?.finish(waitingAtMost: 30)
        for events in eventSinks { events.drain() }
        if let firstError { throw firstError }
        // The relay went on after a recording failed (a full disk), but the run did not do all it
        // was asked: exit with the recording's error rather than 0.
        if let recordingFailure = recorders.lazy.compactMap({ $0.failure() }).first { throw recordingFailure }
    }

    /// The relay's stations, listen address and limits; the library it serves: the recording's
    /// when it records into one, else `--library`'s.
    private func relayConfiguration(recording: RecordingPlan?) throws(AirtapError) -> RelayConfiguration {
        var configuration = RelayConfiguration(stations: plan.stations, host: plan.listen.host, port: plan.listen.port,
                                               maxListeners: plan.maxListeners, burstSeconds: plan.burstSeconds)
        if let recording, let library = recording.openLibrary {
            configuration.library = ServedLibrary(indexPath: library.path, folders: [recording.outputDirectory])
        } else if let library = plan.library {
            // Opened once here so that a library that cannot be is this command's error, not a log line.
            do {
                _ = try LibraryIndex(path: library.indexPath)
            } catch {
                throw error.airtapError
            }
            configuration.library = library
        }
        return configuration
    }

    /// One session per station, feeding the server and, when asked, a recorder and `--json` events.
    private func makeSessions(server: RelayServer, loop: CurlMultiLoop, machine: MachineOutput?,
                              recording: RecordingPlan?, hooks: TrackDoneHooks?)
        throws(AirtapError) -> ([any StationSource], [StationRecorder], [QueuedSink]) {
        let logger = logger
        var recorders: [StationRecorder] = []
        var eventSinks: [QueuedSink] = []
        var sessions: [any StationSource] = []
        for station in plan.stations {
            var sinks: [any StreamSink] = server.sink(for: station.id).map { [$0] } ?? []
            if let events = machine?.sink(for: station) {
                sinks.append(events)
                eventSinks.append(events)
            }
            if let recording {
                // Recording is the side job here: a full disk or --max-size ends it, not the relay.
                let made = try recording.makeRecorder(for: station, logger: logger, trackDoneHooks: hooks,
                                                      onFileWritten: machine?.fileWritten(station: station)) { reason in
                    logger.warning("recording \(station.id) stopped: \(reason)")
                }
                recorders.append(made)
                sinks.append(made.writer)
            }
            var options = plan.connection.ingestOptions(for: station, reconnects: true)
            options.reconnect?.retriesBeforeFirstAudio = false
            options.pacesLocalFiles = true
            sessions.append(StationSources.make(station: station, loop: loop, options: options, sinks: sinks, logger: logger))
        }
        return (sessions, recorders, eventSinks)
    }
}
