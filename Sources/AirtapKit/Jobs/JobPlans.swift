import AirtapIngest
import AirtapRecording
import AirtapStations
import AirtapSupport
import FoundationEssentials
import ICYWire
import Logging
import RecordingRules

/// How streams are requested, as the command line gave it: the per-station `IngestOptions` come
/// from this and the station's own entries.
package struct ConnectionPlan: Sendable, Hashable {
    package var userAgent: String?
    package var headers: [String] = []
    package var proxy: String?
    package var insecure = false
    package var connectTimeout: Double = 10
    package var stallTimeout: Double = 15
    /// nil: the command's default (forever where it reconnects).
    package var retries: Int?
    /// HLS: the best variant at or under this; nil: the station's own setting, else the best of all.
    package var maxBitrateKbps: Int?

    package init() {}

    /// `reconnects`: the job keeps a station going (record, serve, play) rather than reporting once (probe).
    package func ingestOptions(for station: Station, reconnects: Bool = false) -> IngestOptions {
        let stationHeaders = (station.headers ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        return IngestOptions(
            userAgent: userAgent ?? station.userAgent ?? AirtapVersion.userAgent,
            headers: stationHeaders + headers,
            proxy: proxy,
            insecure: insecure,
            connectTimeout: connectTimeout,
            stallTimeout: stallTimeout,
            reconnect: reconnects ? ReconnectPolicy(maxRetries: retries) : nil,
            maxBitrate: (maxBitrateKbps ?? station.maxBitrateKbps).map { $0 * 1000 }
        )
    }
}

/// When a job stops by itself: `--for` or `--until`.
package enum RunLimit: Sendable, Hashable {
    case after(seconds: Double)
    case until(ClockTime)

    /// `--for` wins; `--until` is read against the wall clock when the job starts.
    package init?(seconds: Double?, until: ClockTime?) {
        if let seconds {
            self = .after(seconds: seconds)
        } else if let until {
            self = .until(until)
        } else {
            return nil
        }
    }

    package func seconds(from now: Date = Date()) -> Double {
        switch self {
        case .after(let seconds): seconds
        case .until(let time): time.seconds(after: now)
        }
    }
}

extension StationCatalog {
    /// The stations a job runs, from its arguments (ids or URLs, each at most once) or, with
    /// `all`, every station of the file.
    package func choose(_ arguments: [String], all: Bool = false) throws(AirtapError) -> [Station] {
        if all {
            guard source != nil else { throw .configuration(StationCatalog.noFileMessage()) }
            guard !stations.isEmpty else {
                throw .configuration("--all: \(source ?? "no stations file was found") defines no station")
            }
            return stations
        }
        var chosen: [Station] = []
        for argument in arguments {
            let station = try resolve(argument)
            guard !chosen.contains(where: { $0.id == station.id }) else {
                throw .usage("station '\(station.id)' is named twice")
            }
            chosen.append(station)
        }
        return chosen
    }
}

extension RecordingPlan {
    /// `--template`, checked before anything runs.
    package static func checkTemplate(_ text: String) throws(AirtapError) {
        do {
            _ = try FileNameTemplate(text)
        } catch {
            throw .usage("--template: \(error)")
        }
    }

    /// The same plan with its output folder absolute and created.
    package func creatingOutputDirectory() throws(AirtapError) -> RecordingPlan {
        let path = URL(fileURLWithPath: outputDirectory).standardizedFileURL.path
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .localIO("cannot create output folder \(path): \(describeSystemError(error))")
        }
        var plan = self
        plan.outputDirectory = path
        return plan
    }

    /// One lock per station (`StationLocks`): a second recording of the same station exits 4 (or
    /// waits); what a killed run of the station left is finished first (not into one file, where
    /// a part is the file itself). `outputDirectory`: from `creatingOutputDirectory`.
    package func lock(_ stations: [Station], logger: Logger) throws(AirtapError) -> [RecordingLock] {
        try StationLocks.lock(stations, in: outputDirectory, wait: waitsForLock, finishingLeftovers: singleFile == nil,
                              logger: logger)
    }

    /// The same plan with its library index open (one for the whole process, shared by its
    /// stations); none for one file, whose tracks are not files of their own.
    package func openingLibrary(logger: Logger, defersIndexing: Bool = false) throws(AirtapError) -> RecordingPlan {
        guard library.uses, singleFile == nil else { return self }
        var plan = self
        plan.openLibrary = try TrackLibrary.open(
            path: library.path.map { URL(fileURLWithPath: $0).standardizedFileURL.path }, dedupe: library.dedupes,
            defersIndexing: defersIndexing, environment: ProcessInfo.processInfo.environment, logger: logger)
        return plan
    }

    /// The recorder for one station (see `StationRecorder`); `stop` ends the station's session.
    package func makeRecorder(for station: Station, logger: Logger, alignsCuts: Bool = true, coalescing: Double = 0,
                              batch: Int? = nil, trackDoneHooks: TrackDoneHooks? = nil,
                              onFileWritten: (@Sendable (RecordedTrack) -> Void)? = nil,
                              stop: @escaping @Sendable (StopReason) -> Void) throws(AirtapError) -> StationRecorder {
        try StationRecorder(station: station, plan: self, logger: logger, alignsCuts: alignsCuts, coalescing: coalescing,
                            batch: batch, trackDoneHooks: trackDoneHooks, onFileWritten: onFileWritten, stop: stop)
    }
}

