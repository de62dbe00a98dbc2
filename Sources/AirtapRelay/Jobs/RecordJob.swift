import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import CurlSource
import FoundationEssentials
import Logging

/// `record`: stations into one tagged file per track (or one file with a cue sheet), each in
/// its own folder, in one process.
package struct RecordPlan: Sendable {
    package var stations: [Station]
    /// `--shard K/N`: only this machine's share of `stations`.
    package var shard: Shard?
    package var limit: RunLimit?
    package var recording: RecordingPlan
    package var connection = ConnectionPlan()
    /// `--metrics-listen`: Prometheus text at /metrics there.
    package var metricsListen: ListenAddress?
    package var json = false

    package init(stations: [Station], recording: RecordingPlan) {
        self.stations = stations
        self.recording = recording
    }
}

package struct RecordJob: Sendable {
    package let plan: RecordPlan
    package let logger: Logger
    /// The status line's terminal, when it shows.
    package let statusTerminal: StatusTerminal?

    package init(plan: RecordPlan, logger: Logger, statusTerminal: StatusTerminal? = nil) {
        self.plan = plan
        self.logger = logger
        self.statusTerminal = statusTerminal
    }

    /// Records until the limit, a signal or the stations' ends; throws the first station's error,
    /// else the first recorder's (a full disk).
    package func run() async throws(AirtapError) {
        var chosen = plan.stations
        if let shard = plan.shard {
            chosen = chosen.filter { shard.owns($0.id) }
            if chosen.isEmpty { return try await idle(shard: shard) }
            logger.info("shard \(shard): \(chosen.count) stations")
        }
        // Tracks are indexed off the recorders' path, a batch at a time, and drained below.
        let recording = try plan.recording.creatingOutputDirectory().openingLibrary(logger: logger, defersIndexing: true)
        let locks = try recording.lock(chosen, logger: logger)
        defer { withExtendedLifetime(locks) {} }

        // Files take no harm from a second's delay; a wake-up per network read would be most of a
        // real-time recording's CPU (bench/README.md). The recorder writes all it holds at each batch's end
        // (`StreamSink.batchEnded`), so a kill still costs about the one second the loop had not read.
        let loop = try CurlMultiLoop.forCommand(batching: RecordingPlan.longestNetworkRest)
        defer { loop.shutdown() }
        // One bound on --on-track-done commands for the whole process, however many stations.
        let hooks = recording.onTrackDone.map { TrackDoneHooks(command: $0, logger: logger) }
        let machine = plan.json ? MachineOutput() : nil
        let started = ContinuousClock.now
        let sessions = JobSessions()
        var jobs: [RecordingJob] = []
        for station in chosen {
            jobs.append(try makeJob(station, recording: recording, loop: loop, sessions: sessions, hooks: hooks,
                                    machine: machine, counters: plan.metricsListen == nil ? nil : StreamCounters()))
        }
        let metrics = try await startMetrics(for: jobs)
        let run = StationRun(sessions: jobs.map(\.session), loop: loop)
        run.start(limit: plan.limit?.seconds())
        DirectoryClicks(loop: loop, environment: ProcessInfo.processInfo.environment, logger: logger).started(chosen)
        let statusLine = statusTerminal.map { [jobs] terminal in
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
        recording.openLibrary?.finishPending()
        await hooks?.finish(waitingAtMost: 30)
        // A disk error can come after the stream ended: the files are written behind a queue.
        if let firstError = RecordingJob.firstError(reasons: reasons, jobs: jobs) { throw firstError }
    }

    /// More machines than stations: this one idles until its limit or a signal, like a recorder
    /// would, so a supervisor (a StatefulSet) does not restart it in a loop. The line is logged
    /// once the run listens for signals. Its metrics page (uptime only) answers too, so health
    /// checks on it pass.
    private func idle(shard: Shard) async throws(AirtapError) {
        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        let metrics = try await startMetrics(for: [])
        let run = StationRun(sessions: [], loop: loop)
        run.start(limit: plan.limit?.seconds())
        logger.info("shard \(shard): 0 stations")
        _ = await run.stopped()
        run.finish()
        await metrics?.shutdown()
    }

    /// `--metrics-listen`: the recorders' and sessions' counters at /metrics, until the end.
    private func startMetrics(for jobs: [RecordingJob]) async throws(AirtapError) -> MetricsServer? {
        guard let listen = plan.metricsListen else { return nil }
        let started = ContinuousClock.now
        let server = try await MetricsServer.start(host: listen.host, port: listen.port,
                                                   budget: MetricsServer.budget(stations: jobs.count)) {
            RecordMetrics.text(jobs.compactMap(RecordMetrics.Station.init), uptime: (ContinuousClock.now - started).seconds)
        }
        logger.notice("metrics at http://\(listen.display(host: server.host, port: server.port))/metrics")
        return server
    }

    private func makeJob(_ station: Station, recording: RecordingPlan, loop: CurlMultiLoop, sessions: JobSessions,
                         hooks: TrackDoneHooks?, machine: MachineOutput?, counters: StreamCounters?) throws(AirtapError) -> RecordingJob {
        let recorder = try recording.makeRecorder(for: station, logger: logger, trackDoneHooks: hooks,
                                                  onFileWritten: machine?.fileWritten(station: station),
                                                  stop: sessions.stopper(for: station.id))
        let events = machine?.sink(for: station, emitsStop: false)
        let live = LiveTrackClock()
        var sinks: [any StreamSink] = [recorder.writer, live]
        if let events { sinks.append(events) }
        if let counters { sinks.append(counters) }
        let options = plan.connection.ingestOptions(for: station, reconnects: true)
        let session = sessions.add(StationSources.make(station: station, loop: loop, options: options, sinks: sinks, logger: logger))
        return RecordingJob(station: station, session: session, writer: recorder.writer, tracks: recorder.tracks,
                            failure: recorder.failure, counters: counters, events: events, live: live)
    }
}
