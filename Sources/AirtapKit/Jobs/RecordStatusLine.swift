import AirtapRecording
import AirtapStations
import AirtapSupport
import ICYWire

/// `record`'s one line on a terminal: per station its title, track time, bytes and files
/// written, stations separated by " | ". A pure rendering of readings, tested without a terminal;
/// `StatusRedraw` draws it through a `StatusTerminal`, which cuts it to the terminal's width.
package enum RecordStatusLine {
    /// One station's reading.
    package struct Station: Sendable, Equatable {
        package var id: String
        /// The recorder's count (what has been written).
        package var recorder: RecorderStatus
        /// The audio as it arrives (`LiveTrackClock`): its title and time come first, as the
        /// recorder's trail the stream by the split search window.
        package var live: LiveTrackClock.Reading?

        package init(id: String, recorder: RecorderStatus = RecorderStatus(), live: LiveTrackClock.Reading? = nil) {
            self.id = id
            self.recorder = recorder
            self.live = live
        }
    }

    package static func render(_ stations: [Station]) -> String {
        stations.map(part).joined(separator: " | ")
    }

    /// `id: title [m:ss] 1.2 MB, 3 files`; "…" before the first title, "(no title)" for an empty one.
    package static func part(_ station: Station) -> String {
        let status = station.recorder
        let live = station.live
        let megabytes = (Double(status.bytesWritten) / 1_048_576).formatted(decimals: 1) + " MB"
        let seconds = Int(live?.seconds ?? status.trackSeconds)
        // Station text through the one sanitizer every output uses: control characters escaped
        // visibly, so a title can neither move the cursor nor make the line's width wrong.
        let title = (live?.title ?? status.title).map { $0.isEmpty ? "(no title)" : InertText.render($0) } ?? "…"
        let files = status.filesWritten == 1 ? "1 file" : "\(status.filesWritten) files"
        return "\(station.id): \(title) [\(seconds / 60):\((seconds % 60).zeroPadded(width: 2))] \(megabytes), \(files)"
    }
}

/// Redraws a status line through its `StatusTerminal` every `interval`, and leaves the last one
/// on its own line at `stop()`.
package final class StatusRedraw: Sendable {
    private let task: Task<Void, Never>
    private let terminal: StatusTerminal
    private let render: @Sendable () -> String

    package init(terminal: StatusTerminal, every interval: Duration = .milliseconds(500),
                 render: @escaping @Sendable () -> String) {
        self.terminal = terminal
        self.render = render
        task = Task.detached {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                terminal.show(render())
            }
        }
    }

    package func stop() {
        task.cancel()
        terminal.finish(render())
    }
}
