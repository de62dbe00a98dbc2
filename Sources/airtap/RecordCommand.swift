import AirtapKit
import AirtapRelay
import ArgumentParser
import CurlSource
import FoundationEssentials
import Glibc
import ICYWire
import Logging
import Locking

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record stations into one tagged file per track.",
        discussion: """
            Several stations record in one process, each into its own folder. The first track of a \
            connection and the track cut short by the stop go to incomplete/ in the station's folder. \
            Stops cleanly at --for/--until, --max-size, or on SIGINT/SIGTERM/SIGHUP (exit 0). \
            Exit 4 when another airtap records the same station into the same folder.
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("Station ids from stations.json, or URLs.", valueName: "station-or-url"), completion: StationCompletion.kind)
    var stations: [String] = []

    @Flag(name: .long, help: "Record every station of the stations file.")
    var all = false

    @Option(name: .long, help: ArgumentHelp("Record only this machine's share: shard K of N (K from 0), by rendezvous hashing of the station ids.", valueName: "K/N"))
    var shard: Shard?

    @Option(name: [.customLong("for"), .customShort("t")], help: ArgumentHelp("Record this long (90s, 15m, 2h, 1h30m).", valueName: "duration"))
    var duration: DurationSpec?

    @Option(name: .long, help: ArgumentHelp("Record until this time of day (local, 24 h).", valueName: "HH:MM"))
    var until: ClockTime?

    @OptionGroup var recording: RecordingArguments

    @OptionGroup var log: LogFileOption

    @Option(name: .long, help: ArgumentHelp("Serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks a free one).", valueName: "host:port"))
    var metricsListen: ListenAddress?

    @Flag(name: .long, help: "One JSON object per line on stdout: titles, files, reconnects, stops (README: Machine-readable output).")
    var json = false

    func validate() throws {
        if duration != nil, until != nil { throw ValidationError("--for and --until cannot be used together") }
        if recording.single != nil, stations.count > 1 || all { throw ValidationError("--single takes one station") }
        if all, !stations.isEmpty { throw ValidationError("name stations or give --all, not both") }
        if !all, stations.isEmpty { throw ValidationError("name at least one station, or give --all") }
    }

    func run() async throws {
        let logFile = try log.open()
        let onTerminal = isatty(STDERR_FILENO) == 1
        // On a terminal the status line shows, with --log too; --json scripts get none.
        let statusTerminal = onTerminal && !json ? StatusTerminal() : nil
        let logger = global.makeLogger(defaultLevel: onTerminal && log.path == nil ? .warning : .info, file: logFile,
                                       statusTerminal: statusTerminal)
        let catalog = try global.loadCatalog()
        var chosen: [Station] = []
        for argument in stations {
            let station = try catalog.resolve(argument)
            guard !chosen.contains(where: { $0.id == station.id }) else {
                throw AirtapError.usage("station '\(station.id)' is named twice")
            }
            chosen.append(station)
        }
        if all {
            guard catalog.source != nil else { throw AirtapError.configuration(StationCatalog.noFileMessage()) }
            guard !catalog.stations.isEmpty else {
                throw AirtapError.configuration("--all: \(catalog.source ?? "no stations file was found") defines no station")
            }
            chosen = catalog.stations
        }
        if let shard {
            chosen = chosen.filter { shard.owns($0.id) }
            if chosen.isEmpty {
                // More machines than stations: this one idles until its limit or a signal, like a
                // recorder would, so a supervisor (a StatefulSet) does not restart it in a loop.
                // The line is logged once the run listens for signals. Its metrics page (uptime
                // only) answers too, so health checks on it pass.
                let loop = try CurlMultiLoop.forCommand()
                defer { loop.shutdown() }
                let metrics = try await startMetrics(for: [], logger: logger)
                let run = StationRun(sessions: [], loop: loop)
                run.start(limit: duration?.seconds ?? until?.seconds(after: Date()))
                logger.info("shard \(shard): 0 stations")
                _ = await run.stopped()
                run.finish()
                await metrics?.shutdown()
                return
            }
            logger.info("shard \(shard): \(chosen.count) stations")
        }
        let outputDirectory = try recording.makeOutputDirectory()
        let locks = try recording.lock(chosen, in: outputDirectory, logger: logger)
        defer { withExtendedLifetime(locks) {} }

        // Files take no harm from a second's delay; a wake-up per network read would be most of a
        // real-time recording's CPU (bench/README.md). The recorder writes all it holds at each batch's end
        // (`BatchEndAware`), so a kill still costs about the one second the loop had not read.
        let loop = try CurlMultiLoop.forCommand(batching: .seconds(1))
        defer { loop.shutdown() }
        // One bound on --on-track-done commands for the whole process, however many stations.
        let hooks = recording.onTrackDone.map { TrackDoneHooks(command: $0, logger: logger) }
        let library = try recording.openLibrary(logger: logger)
        let machine = json ? MachineOutput() : nil
        let started = ContinuousClock.now
        let jobs = try chosen.map { station in
            try makeJob(station, outputDirectory: outputDirectory, loop: loop, hooks: hooks, library: library, logger: logger,
                        machine: machine, counters: metricsListen == nil ? nil : StreamCounters())
        }
        let metrics = try await startMetrics(for: jobs, logger: logger)
        let run = StationRun(sessions: jobs.map(\.session), loop: loop)
        run.start(limit: duration?.seconds ?? until?.seconds(after: Date()))
        let statusLine = statusTerminal.map { terminal in
            StatusRedraw(terminal: terminal) { RecordStatusLine.render(jobs.map(\.statusReading)) }
        }
        let reasons = await run.stopped()
        run.finish()
        statusLine?.stop()
        await metrics?.shutdown()
        for (job, reason) in zip(jobs, reasons) {
            job.writer.drain()
            if let machine, let events = job.events {
                events.drain()
                machine.writer.emit(.stop(job.finalReason(reason), seconds: (ContinuousClock.now - started).seconds,
                                          station: job.station))
            }
        }
        await hooks?.finish(waitingAtMost: 30)
        // A disk error can come after the stream ended: the files are written behind a queue.
        if let firstError = RecordingJob.firstError(reasons: reasons, jobs: jobs) { throw firstError }
    }

    /// `--metrics-listen`: the recorders' and sessions' counters at /metrics, until the end.
    private func startMetrics(for jobs: [RecordingJob], logger: Logger) async throws -> MetricsServer? {
        guard let metricsListen else { return nil }
        let started = ContinuousClock.now
        let server = try await MetricsServer.start(host: metricsListen.host, port: metricsListen.port,
                                                   budget: MetricsServer.budget(stations: jobs.count)) {
            RecordMetrics.text(jobs.compactMap(RecordMetrics.Station.init), uptime: (ContinuousClock.now - started).seconds)
        }
        logger.notice("metrics at http://\(metricsListen.display(host: server.host, port: server.port))/metrics")
        return server
    }

    private func makeJob(_ station: Station, outputDirectory: String, loop: CurlMultiLoop, hooks: TrackDoneHooks?, library: TrackLibrary?,
                         logger: Logger, machine: MachineOutput?, counters: StreamCounters?) throws -> RecordingJob {
        let sessionRef = SessionReference()
        let recorder = try recording.makeRecorder(for: station, outputDirectory: outputDirectory, logger: logger,
                                                  library: library, trackDoneHooks: hooks,
                                                  onFileWritten: machine?.fileWritten(station: station)) { reason in
            sessionRef.session?.stop(reason)
        }
        let events = machine?.sink(for: station, emitsStop: false)
        let live = LiveTrackClock()
        var sinks: [any StreamSink] = [recorder.writer, live]
        if let events { sinks.append(events) }
        if let counters { sinks.append(counters) }
        let session = StationSession(station: station, loop: loop, options: connection.ingestOptions(for: station, reconnects: true),
                                     sinks: sinks, logger: logger)
        sessionRef.session = session
        return RecordingJob(station: station, session: session, writer: recorder.writer, tracks: recorder.tracks,
                            failure: recorder.failure, counters: counters, events: events, live: live)
    }
}
