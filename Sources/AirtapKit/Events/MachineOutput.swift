import AirtapIngest
import AirtapRecording
import AirtapStations
import AirtapSupport
import ICYWire

/// `--json` for the streaming commands: every line on stdout is one `MachineEvent` (README
/// "Machine-readable output"); the terminal text those commands print otherwise is left out.
package struct MachineOutput: Sendable {
    package init() {}

    package let writer = MachineEventWriter(write: Terminal.output)

    /// The station's stream events (head, format, titles, gaps, reconnects, and the stop unless
    /// the command reports it), behind a queue of their own so printing never holds up the ingest
    /// thread.
    package func sink(for station: Station, emitsStop: Bool = true) -> QueuedSink {
        QueuedSink(MachineEventSink(station: station, writer: writer, emitsStop: emitsStop), label: "json.\(station.id)")
    }

    /// For a recorder: a `file` event for each file saved.
    package func fileWritten(station: Station) -> @Sendable (RecordedTrack) -> Void {
        { [writer] track in writer.emit(.file(track, station: station)) }
    }
}
