import AirtapIngest
import AirtapRecording
import AirtapStations
import AirtapSupport

/// One station of `record`: its session and what records it, and what the status line, the
/// metrics and `--json` read of it.
package struct RecordingJob: Sendable {
    package let station: Station
    package let session: any StationSource
    package let writer: QueuedSink
    /// nil with --single (one file, no per-track status).
    package let tracks: TrackRecorder?
    /// The recorder's own failure (a full disk), which can come after the stream ended.
    package let failure: @Sendable () -> AirtapError?
    /// With --metrics-listen: what the session delivered.
    package var counters: StreamCounters?
    /// The `--json` events of the station's stream, drained before its stop is reported.
    package var events: QueuedSink?
    /// The title and track time of the audio as it arrives, for the status line.
    package var live: LiveTrackClock?

    package init(station: Station, session: any StationSource, writer: QueuedSink, tracks: TrackRecorder?,
                 failure: @escaping @Sendable () -> AirtapError?, counters: StreamCounters? = nil,
                 events: QueuedSink? = nil, live: LiveTrackClock? = nil) {
        self.station = station
        self.session = session
        self.writer = writer
        self.tracks = tracks
        self.failure = failure
        self.counters = counters
        self.events = events
        self.live = live
    }

    /// What the status line shows of this station now.
    package var statusReading: RecordStatusLine.Station {
        RecordStatusLine.Station(id: station.id, recorder: tracks?.currentStatus ?? RecorderStatus(), live: live?.reading)
    }

    /// The stop to report for the station: the recorder's failure, when it had one, else how
    /// the session stopped.
    package func finalReason(_ sessionReason: StopReason) -> StopReason {
        failure().map { .error($0) } ?? sessionReason
    }

    /// The error `record` exits with: the first session that stopped with one, else the first
    /// recorder that failed (asked after the files were drained: a disk error can come after the
    /// stream ended). nil: exit 0.
    package static func firstError(reasons: [StopReason], jobs: [RecordingJob]) -> AirtapError? {
        for reason in reasons {
            if case .error(let error) = reason { return error }
        }
        return jobs.lazy.compactMap { $0.failure() }.first
    }
}
