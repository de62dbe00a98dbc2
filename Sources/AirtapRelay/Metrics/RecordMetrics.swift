import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations

/// `record --metrics-listen`'s `/metrics`: per station, what its session received and what its
/// recorder wrote.
enum RecordMetrics {
    package struct Station: Sendable {
        package let id: String
        package let stream: StreamCounters.Snapshot
        /// nil with --single (one file, no per-track status).
        package let recorder: RecorderStatus?

        package init(id: String, stream: StreamCounters.Snapshot, recorder: RecorderStatus?) {
            self.id = id
            self.stream = stream
            self.recorder = recorder
        }

        /// A `record` job's counters now; nil when it keeps none (no --metrics-listen).
        package init?(_ job: RecordingJob) {
            guard let counters = job.counters else { return nil }
            self.init(id: job.station.id, stream: counters.snapshot, recorder: job.tracks?.currentStatus)
        }
    }

    package static func text(_ stations: [Station], uptime: Double) -> String {
        var out = PrometheusText()
        func family(_ name: String, _ type: String, _ help: String, _ value: (Station) -> Double?) {
            out.family(name, type: type, help: help, stations.compactMap { station in value(station).map { (station.id, $0) } })
        }
        family("record_upstream_up", "gauge", "1 while the station streams, else 0.") { $0.stream.isStreaming ? 1 : 0 }
        family("record_upstream_reconnects_total", "counter", "Reconnects to the station.") { Double($0.stream.reconnects) }
        family("record_frames_received_total", "counter", "Audio frames received.") { Double($0.stream.frames) }
        family("record_audio_bytes_received_total", "counter", "Audio bytes received.") { Double($0.stream.audioBytes) }
        family("record_titles_total", "counter", "Title changes received.") { Double($0.stream.titles) }
        family("record_bytes_written_total", "counter", "Bytes written to files (tags included).") { $0.recorder.map { Double($0.bytesWritten) } }
        family("record_tracks_written_total", "counter", "Track files completed.") { $0.recorder.map { Double($0.filesWritten) } }
        out.family("uptime_seconds", type: "gauge", help: "Seconds since the recording started.", [(nil, uptime)])
        return out.text
    }
}
