import AirtapKit
import ArgumentParser
import CurlSource
import Foundation
import ICYWire
import Logging
import Synchronization

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

    @Argument(help: ArgumentHelp("Station ids from stations.json, or URLs.", valueName: "station-or-url"))
    var stations: [String]

    @Option(name: .customLong("for"), help: ArgumentHelp("Record this long (90s, 15m, 2h, 1h30m).", valueName: "duration"))
    var duration: DurationSpec?

    @Option(name: .long, help: ArgumentHelp("Record until this time of day (local, 24 h).", valueName: "HH:MM"))
    var until: ClockTime?

    @Option(name: .long, help: ArgumentHelp("Stop a station once its files reach this size (500k, 700M, 2G).", valueName: "size"))
    var maxSize: ByteSize?

    @Option(name: .long, help: ArgumentHelp("Output folder.", valueName: "dir"))
    var out = "recordings"

    @Option(name: .long, help: ArgumentHelp("File names: {station} {artist} {title} {date} {time} {seq}, / for folders.", valueName: "template"))
    var template: String?

    @Option(name: .long, help: ArgumentHelp("Write everything into one file, with FILE.cue beside it.", valueName: "file"))
    var single: String?

    @Flag(name: .long, help: "Add an ID3v1 tag at the end of each file too.")
    var id3v1 = false

    @Flag(name: .long, help: "Write bare frames: no ID3 tags.")
    var noTags = false

    @Option(name: .long, help: ArgumentHelp("Tracks shorter than this go to incomplete/ (jingles, ads).", valueName: "duration"))
    var minTrack: DurationSpec?

    @Option(name: .long, help: ArgumentHelp("Run after each complete track with the file as its argument; AIRTAP_ARTIST, AIRTAP_TITLE, AIRTAP_STATION in its environment.", valueName: "command"))
    var onTrackDone: String?

    @Flag(name: .long, help: "Wait for another recording of the same station to end instead of exiting 4.")
    var wait = false

    @Option(name: .long, help: ArgumentHelp("Append log lines to this file.", valueName: "file"))
    var log: String?

    func validate() throws {
        if duration != nil, until != nil { throw ValidationError("--for and --until cannot be used together") }
        if single != nil, stations.count > 1 { throw ValidationError("--single takes one station") }
        if let template {
            do { _ = try FileNameTemplate(template) } catch { throw ValidationError("--template: \(error)") }
        }
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
        let outputDirectory = URL(fileURLWithPath: out).standardizedFileURL.path
        do {
            try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
        } catch {
            throw AirtapError.localIO("cannot create output folder \(outputDirectory): \(error.localizedDescription)")
        }

        var locks: [RecordingLock] = []
        for station in chosen {
            let folder = outputDirectory + "/" + (SafeFileName.component(station.name) ?? "station")
            locks.append(try RecordingLock.acquire(folder: folder, stationID: station.id, wait: wait))
        }
        defer { withExtendedLifetime(locks) {} }

        let loop = CurlMultiLoop()
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
        for job in jobs { job.writer.drain() }
        if let firstError { throw firstError }
    }

    private func makeJob(_ station: Station, outputDirectory: String, loop: CurlMultiLoop, logger: Logger) throws -> RecordingJob {
        var stationLogger = logger
        stationLogger[metadataKey: "station"] = "\(station.id)"
        let sessionRef = SessionReference()
        let stop: @Sendable (StopReason) -> Void = { reason in sessionRef.session?.stop(reason) }
        let recorder: any StreamSink
        var trackRecorder: TrackRecorder?
        if let single {
            let path = URL(fileURLWithPath: single).standardizedFileURL.path
            recorder = SingleFileRecorder(path: path, station: station, logger: stationLogger, stop: stop)
        } else {
            let templateText = template ?? station.output ?? FileNameTemplate.standard.text
            let options = RecordingOptions(
                outputDirectory: outputDirectory,
                template: try FileNameTemplate(templateText),
                writesTags: !noTags,
                writesID3v1: id3v1,
                minimumTrackSeconds: minTrack?.seconds,
                onTrackDone: onTrackDone,
                maxBytes: maxSize?.bytes)
            let tracks = TrackRecorder(station: station, options: options, logger: stationLogger, stop: stop)
            trackRecorder = tracks
            recorder = tracks
        }
        // Lossless: a slow disk delays the files, never the stream or the other stations.
        let writer = QueuedSink(recorder, label: "record.\(station.id)")
        let session = StationSession(station: station, loop: loop, options: connection.ingestOptions(for: station),
                                     sinks: [writer], logger: logger)
        sessionRef.session = session
        return RecordingJob(station: station, session: session, writer: writer, tracks: trackRecorder)
    }
}

struct RecordingJob: Sendable {
    let station: Station
    let session: StationSession
    let writer: QueuedSink
    let tracks: TrackRecorder?
}

/// The recorder needs to stop its own session (on --max-size or a disk error), but is created first.
final class SessionReference: Sendable {
    private let value = Mutex<StationSession?>(nil)

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
            let megabytes = String(format: "%.1f MB", Double(status.bytesWritten) / 1_048_576)
            let seconds = Int(status.trackSeconds)
            let title = status.title.map { $0.isEmpty ? "(no title)" : $0 } ?? "…"
            return "\(job.station.id): \(title) [\(seconds / 60):\(String(format: "%02d", seconds % 60))] \(megabytes), \(status.filesWritten) files"
        }
        return String(parts.joined(separator: " | ").prefix(200))
    }
}
