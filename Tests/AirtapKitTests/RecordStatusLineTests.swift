@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapRelay
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import CurlSource
import Locking
import Logging
import Testing

/// `record`'s status line, its terminal and its job rules, without a terminal or a station: the
/// line is rendered from readings, the terminal is two closures.
@Suite("record's status line and job, without a terminal")
struct RecordStatusLineTests {
    /// A terminal that records what was written, `columns` wide.
    final class FakeTerminal: Sendable {
        let written = Locked<[String]>([])
        let columns: Int

        init(columns: Int) {
            self.columns = columns
        }

        var terminal: StatusTerminal {
            StatusTerminal(write: { [written] text in written.withLock { $0.append(text) } }, columns: { [columns] in columns })
        }

        var output: [String] { written.withLock { $0 } }
    }

    static func recorder(title: String?, seconds: Double, bytes: Int, files: Int) -> RecorderStatus {
        var status = RecorderStatus()
        status.title = title
        status.trackSeconds = seconds
        status.bytesWritten = bytes
        status.filesWritten = files
        return status
    }

    @Test("One station: title, m:ss, megabytes to one decimal, files counted in words")
    func oneStation() {
        let station = RecordStatusLine.Station(id: "jazz", recorder: Self.recorder(title: "A - B", seconds: 125.9, bytes: 3_250_000, files: 1))
        #expect(RecordStatusLine.render([station]) == "jazz: A - B [2:05] 3.1 MB, 1 file")
        let two = RecordStatusLine.Station(id: "jazz", recorder: Self.recorder(title: "A - B", seconds: 5, bytes: 0, files: 2))
        #expect(RecordStatusLine.render([two]) == "jazz: A - B [0:05] 0.0 MB, 2 files")
    }

    @Test("The live reading's title and time win over the recorder's; no title yet is …, an empty one (no title)")
    func liveAndMissingTitles() {
        let recorder = Self.recorder(title: "old", seconds: 10, bytes: 0, files: 0)
        let live = RecordStatusLine.Station(id: "a", recorder: recorder, live: LiveTrackClock.Reading(title: "new", seconds: 61))
        #expect(RecordStatusLine.part(live) == "a: new [1:01] 0.0 MB, 0 files")
        // A live reading before its first title falls back to the recorder's title, not its time.
        let untitledLive = RecordStatusLine.Station(id: "a", recorder: recorder, live: LiveTrackClock.Reading(title: nil, seconds: 3))
        #expect(RecordStatusLine.part(untitledLive) == "a: old [0:03] 0.0 MB, 0 files")
        #expect(RecordStatusLine.part(RecordStatusLine.Station(id: "a")) == "a: … [0:00] 0.0 MB, 0 files")
        let empty = RecordStatusLine.Station(id: "a", live: LiveTrackClock.Reading(title: "", seconds: 0))
        #expect(RecordStatusLine.part(empty) == "a: (no title) [0:00] 0.0 MB, 0 files")
    }

    @Test("Several stations are joined by |, and a title's control characters are escaped")
    func severalStationsInert() {
        let line = RecordStatusLine.render([
            RecordStatusLine.Station(id: "a", live: LiveTrackClock.Reading(title: "x\u{1B}[2Jy", seconds: 0)),
            RecordStatusLine.Station(id: "b"),
        ])
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 }, "\(line.debugDescription)")
        #expect(line.hasPrefix("a: x\\e[2Jy [0:00]"), "\(line)")
        #expect(line.contains(" | b: … "), "\(line)")
    }

    @Test("The terminal cuts to one column less than its width, counting wide characters twice, with …")
    func fitting() {
        #expect(StatusTerminal.fitting("abcdefghij", columns: 11) == "abcdefghij")
        #expect(StatusTerminal.fitting("abcdefghij", columns: 10) == "abcdefgh…")
        // 漢 takes two columns: four of them are 8 columns, over the 7 that fit.
        let cut = StatusTerminal.fitting("漢漢漢漢", columns: 8)
        #expect(cut == "漢漢漢…", "\(cut)")
        #expect(TerminalColumns.width(of: cut) <= 7)
        #expect(TerminalColumns.width(of: "e\u{301}") == 1, "a combining mark takes no column")
    }

    @Test("The terminal: a redraw clears the line first, a log line goes above it, finish leaves a newline, later redraws are ignored")
    func terminalRules() {
        let fake = FakeTerminal(columns: 20)
        let terminal = fake.terminal
        // Before anything is shown, a log line is printed as it is: no line to clear or redraw.
        terminal.printAbove { fake.written.withLock { $0.append("log 1\n") } }
        #expect(fake.output == ["log 1\n"])
        terminal.show("status that is much too long for twenty columns")
        #expect(fake.output.last == StatusTerminal.clearLine + "status that is muc…")
        terminal.printAbove { fake.written.withLock { $0.append("log 2\n") } }
        #expect(Array(fake.output.suffix(3)) == [StatusTerminal.clearLine, "log 2\n", "status that is muc…"])
        terminal.finish("done")
        #expect(fake.output.last == StatusTerminal.clearLine + "done\n")
        let count = fake.output.count
        terminal.show("late")
        terminal.finish("again")
        #expect(fake.output.count == count, "nothing is drawn after finish: \(fake.output)")
        // After finish a log line is just printed.
        terminal.printAbove { fake.written.withLock { $0.append("log 3\n") } }
        #expect(fake.output.last == "log 3\n")
    }

    @Test("StatusRedraw leaves the last rendering on its own line at stop")
    func redrawStop() {
        let fake = FakeTerminal(columns: 80)
        let text = Locked("first")
        let redraw = StatusRedraw(terminal: fake.terminal, every: .seconds(3600)) { text.withLock { $0 } }
        text.withLock { $0 = "last" }
        redraw.stop()
        #expect(fake.output.last == StatusTerminal.clearLine + "last\n")
    }

    /// A job on a session that never starts, its recorder failure set by the test.
    static func job(_ id: String, loop: CurlMultiLoop, failure: AirtapError?, counters: StreamCounters? = nil) -> RecordingJob {
        let station = Station(id: id, name: id, urls: ["http://127.0.0.1:9/"])
        let session = StationSession(station: station, loop: loop, options: IngestOptions(), sinks: [], logger: Logger(label: "test"))
        return RecordingJob(station: station, session: session, writer: QueuedSink(CollectingSink(), label: "test"), tracks: nil,
                            failure: { failure }, counters: counters)
    }

    @Test("record's exit: the first session error, else the first recorder failure; each stop reports its recorder's failure")
    func firstErrorRule() {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let disk = AirtapError.localIO("disk full")
        let network = AirtapError.network(url: "http://x/", reason: "refused")
        let clean = Self.job("a", loop: loop, failure: nil)
        let failed = Self.job("b", loop: loop, failure: disk)
        #expect(RecordingJob.firstError(reasons: [.limitReached, .limitReached], jobs: [clean, failed]) == disk)
        #expect(RecordingJob.firstError(reasons: [.limitReached, .error(network)], jobs: [clean, failed]) == network)
        #expect(RecordingJob.firstError(reasons: [.userRequest, .endOfStream], jobs: [clean, clean]) == nil)
        #expect(failed.finalReason(.limitReached) == .error(disk))
        #expect(clean.finalReason(.limitReached) == .limitReached)
    }

    @Test("Metrics: a job with counters is a station of /metrics, one without is left out")
    func metricsStations() {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let counted = Self.job("a", loop: loop, failure: nil, counters: StreamCounters())
        let uncounted = Self.job("b", loop: loop, failure: nil)
        let stations = [counted, uncounted].compactMap(RecordMetrics.Station.init)
        #expect(stations.map(\.id) == ["a"])
        let text = RecordMetrics.text(stations, uptime: 1)
        #expect(text.contains("record_upstream_up{station=\"a\"} 0"), "\(text)")
        #expect(!text.contains("\"b\""), "\(text)")
    }
}
