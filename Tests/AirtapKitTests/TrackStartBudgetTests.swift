@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapStations
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
import TestStation
import Testing

/// How many tracks a station may start per minute of wall-clock time: the rule alone (no I/O,
/// instants made up), then through the recorder with a flooding Ogg station read as fast as it
/// sends and a clock that never moves.
@Suite("Track start budget")
struct TrackStartBudgetTests {
    static let origin = ContinuousClock.now

    static func at(_ seconds: Double) -> ContinuousClock.Instant {
        origin + .milliseconds(Int64((seconds * 1000).rounded()))
    }

    @Test("a burst of 40 at once, then one every 3 s; a quiet spell fills it again, never past the burst")
    func burstAndRefill() {
        var budget = TrackStartBudget.standard
        #expect(budget.maximumPerMinute == 60)
        let burst = (0..<100).filter { _ in budget.takeStart(at: Self.at(0)) }.count
        #expect(burst == 40)
        let early = budget.takeStart(at: Self.at(2.9))
        let onTime = budget.takeStart(at: Self.at(3.0))
        let again = budget.takeStart(at: Self.at(3.1))
        #expect(!early && onTime && !again)
        // An hour of nothing gives back the burst, not 1200 starts.
        let later = (0..<100).filter { _ in budget.takeStart(at: Self.at(3600)) }.count
        #expect(later == 40)
        // A clock that steps back (it cannot, but a budget must not mint starts from it).
        let stepBack = budget.takeStart(at: Self.at(10))
        #expect(!stepBack)
    }

    @Test("a flood asking 100 times a second for ten minutes starts at most 60 tracks in any minute")
    func floodPerMinute() {
        var budget = TrackStartBudget.standard
        var starts: [Double] = []
        for tick in 0..<60_000 {
            let seconds = Double(tick) / 100
            if budget.takeStart(at: Self.at(seconds)) { starts.append(seconds) }
        }
        for (index, start) in starts.enumerated() {
            let inMinute = starts[index...].prefix { $0 < start + 60 }.count
            #expect(inMinute <= 60, "\(inMinute) starts in the minute from \(start) s")
        }
        // Ten minutes less a tick: the burst at 0 s, then one every 3 s from 3 s to 597 s.
        #expect(starts.count == 40 + 199)
    }

    /// A station whose links last 1.25 s (above the track floor), sent as fast as it is read.
    static func floodConfiguration() -> StationConfiguration {
        var configuration = StationConfiguration(trackSeconds: 2.5, pace: .fast, titles: ["Flood A", "Flood B"], maxSeconds: 100)
        configuration.codec = .opus
        configuration.oggLinkSeconds = 1.25
        return configuration
    }

    static func record(_ server: TestStationServer, budget: TrackStartBudget?, lines: Locked<[String]>) async throws -> URL {
        let folder = try AirtapBinary.temporaryFolder()
        var options = RecordingOptions(outputDirectory: folder.path, writesTags: false)
        options.measuresLoudness = false
        options.trackStarts = budget
        // Frozen: however long the machine takes to read the flood, it all comes in one instant.
        let frozen = ContinuousClock.now
        options.monotonicNow = { frozen }
        let logger = Logger(label: "flood") { _ in KeepListTests.LineCollector(lines: lines) }
        let station = Station(id: "flood", name: "Flood FM", urls: [server.streamURL])
        let recorder = TrackRecorder(station: station, options: options, logger: logger) { _ in }
        let writer = QueuedSink(recorder, label: "flood")
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let session = StationSession(station: station, loop: loop, options: IngestOptions(stallTimeout: 60), sinks: [writer],
                                     logger: Logger(label: "test"))
        session.start()
        let stop = await session.stopped()
        await reportStall(stop, url: server.streamURL)
        #expect(stop == .endOfStream)
        writer.drain()
        #expect(recorder.failure == nil)
        return folder
    }

    @Test("record: an Ogg station starting 80 links of 1.25 s at once gets at most 41 files, every page kept, one warning")
    func oggLinkFlood() async throws {
        let server = try await TestStationServer.start(Self.floodConfiguration())
        defer { Task { try? await server.stop() } }
        let sent = server.program.audio(from: 0, count: server.program.audioByteCount(from: 0, seconds: 100))

        let lines = Locked<[String]>([])
        let folder = try await Self.record(server, budget: .standard, lines: lines)
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = filesBelow(folder).filter { $0.hasSuffix(".opus") }
        // The connection's first track, then one file per start the budget allowed.
        #expect(files.count >= 30 && files.count <= 41, "\(files.count) files")
        let total = try files.reduce(0) { $0 + (try Data(contentsOf: folder.appendingPathComponent($1))).count }
        #expect(total == sent.count, "every page in a file")
        let warnings = lines.withLock { $0 }.filter { $0.contains("tracks a minute") }
        #expect(warnings.count == 1, "\(lines.withLock { $0 }.suffix(5))")

        // Without the budget, the same flood is a file per link.
        let unbounded = try await Self.record(server, budget: nil, lines: Locked([]))
        defer { try? FileManager.default.removeItem(at: unbounded) }
        #expect(filesBelow(unbounded).filter { $0.hasSuffix(".opus") }.count >= 70)
    }
}
