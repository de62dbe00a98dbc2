import AirtapKit
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

    @Option(name: .customLong("for"), help: ArgumentHelp("Record this long (90s, 15m, 2h, 1h30m).", valueName: "duration"))
    var duration: DurationSpec?

    @Option(name: .long, help: ArgumentHelp("Record until this time of day (local, 24 h).", valueName: "HH:MM"))
    var until: ClockTime?

    @OptionGroup var recording: RecordingArguments

    @Option(name: .long, help: ArgumentHelp("Append log lines to this file.", valueName: "file"))
    var log: String?

    func validate() throws {
        if duration != nil, until != nil { throw ValidationError("--for and --until cannot be used together") }
        if recording.single != nil, stations.count > 1 || all { throw ValidationError("--single takes one station") }
        if all, !stations.isEmpty { throw ValidationError("name stations or give --all, not both") }
        if !all, stations.isEmpty { throw ValidationError("name at least one station, or give --all") }
    }

    func run() async throws {
        let logFile = try log.map { path throws(AirtapError) in try FileLogHandler.SharedFile(appendingTo: path) }
        let onTerminal = isatty(STDERR_FILENO) == 1
        let logger = global.makeLogger(defaultLevel: onTerminal && log == nil ? .warning : .info, file: logFile)
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
            guard !catalog.stations.isEmpty else {
                throw AirtapError.configuration("--all: \(catalog.source ?? "no stations file was found") defines no station")
            }
            chosen = catalog.stations
        }
        if let shard {
            chosen = chosen.filter { shard.owns($0.id) }
            logger.info("shard \(shard): \(chosen.count) stations")
            if chosen.isEmpty {
                // More machines than stations: this one idles until its limit or a signal, like a
                // recorder would, so a supervisor (a StatefulSet) does not restart it in a loop.
                try await idle(until: duration?.seconds ?? until?.seconds(after: Date()))
                return
            }
        }
        let outputDirectory = try recording.makeOutputDirectory()
        let locks = try recording.lock(chosen, in: outputDirectory)
        defer { withExtendedLifetime(locks) {} }

        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        var jobs: [RecordingJob] = []
        for station in chosen {
            jobs.append(try makeJob(station, outputDirectory: outputDirectory, loop: loop, logger: logger))
        }
        let sessions = jobs.map(\.session)
        let signals = SignalTrap { for session in sessions { session.stop(.userRequest) } }
        let limit = duration?.seconds ?? until?.seconds(after: Date())
        for job in jobs {
            job.session.start()
            if let limit { job.session.stop(.limitReached, after: limit) }
        }
        let statusLine = onTerminal && log == nil ? StatusLine(jobs: jobs) : nil
        var firstError: AirtapError?
        for job in jobs {
            if case .error(let error) = await job.session.stopped(), firstError == nil { firstError = error }
        }
        signals.cancel()
        statusLine?.stop()
        for job in jobs {
            job.writer.drain()
            // A disk error can come after the stream ended: the files are written behind a queue.
            if firstError == nil, let failure = job.failure() { firstError = failure }
        }
        if let firstError { throw firstError }
    }

    /// Waits for `seconds` (forever when nil) or SIGINT/SIGTERM/SIGHUP, whichever comes first.
    private func idle(until seconds: Double?) async throws {
        let stop = AsyncStream<Void>.makeStream()
        let signals = SignalTrap { stop.continuation.finish() }
        defer { signals.cancel() }
        let timer = seconds.map { limit in
            Task { try? await Task.sleep(for: .seconds(limit)); stop.continuation.finish() }
        }
        defer { timer?.cancel() }
        for await _ in stop.stream {}
    }

    private func makeJob(_ station: Station, outputDirectory: String, loop: CurlMultiLoop, logger: Logger) throws -> RecordingJob {
        let sessionRef = SessionReference()
        let recorder = try recording.makeRecorder(for: station, outputDirectory: outputDirectory, logger: logger) { reason in
            sessionRef.session?.stop(reason)
        }
        let session = StationSession(station: station, loop: loop, options: connection.ingestOptions(for: station, reconnects: true),
                                     sinks: [recorder.writer], logger: logger)
        sessionRef.session = session
        return RecordingJob(station: station, session: session, writer: recorder.writer, tracks: recorder.tracks,
                            failure: recorder.failure)
    }
}

struct RecordingJob: Sendable {
    let station: Station
    let session: StationSession
    let writer: QueuedSink
    let tracks: TrackRecorder?
    let failure: @Sendable () -> AirtapError?
}

/// The recorder needs to stop its own session (on --max-size or a disk error), but is created first.
final class SessionReference: Sendable {
    private let value = Locked<StationSession?>(nil)

    var session: StationSession? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// The one line on a terminal: station, title, track time, bytes, files written.
final class StatusLine: Sendable {
    private let task: Task<Void, Never>

    init(jobs: [RecordingJob]) {
        task = Task.detached {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                Terminal.errorPartial("\r\u{1B}[K" + Self.render(jobs))
            }
        }
    }

    func stop() {
        task.cancel()
        Terminal.errorPartial("\r\u{1B}[K")
    }

    private static func render(_ jobs: [RecordingJob]) -> String {
        let parts = jobs.map { job -> String in
            let status = job.tracks?.currentStatus ?? RecorderStatus()
            let megabytes = (Double(status.bytesWritten) / 1_048_576).formatted(decimals: 1) + " MB"
            let seconds = Int(status.trackSeconds)
            let title = status.title.map { $0.isEmpty ? "(no title)" : $0 } ?? "…"
            return "\(job.station.id): \(title) [\(seconds / 60):\((seconds % 60).zeroPadded(width: 2))] \(megabytes), \(status.filesWritten) files"
        }
        return String(parts.joined(separator: " | ").prefix(200))
    }
}
