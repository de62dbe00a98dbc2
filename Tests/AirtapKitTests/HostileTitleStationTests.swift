import AirtapIngest
import AirtapKit
import AirtapStations
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
@testable import TestStation
import Testing

/// The test station in its hostile-title mode, over real libcurl: titles holding NUL, C0 and
/// C1 controls, ESC sequences, broken UTF-8, `';` and one of 4080 bytes must neither cost audio
/// nor make the demuxer doubt a length byte.
@Suite("Hostile titles over loopback")
struct HostileTitleStationTests {
    /// One track per kind of hostile title (each change gets the next kind), and a second round
    /// of the first ones.
    static let configuration: StationConfiguration = {
        var configuration = StationConfiguration(
            metaint: 8000, trackSeconds: 2, pace: .fast,
            titles: (0..<HostileTitle.kindCount).map { "Hostile \($0) - Track \($0)" }, maxSeconds: 24)
        configuration.hostileTitles = true
        return configuration
    }()

    static let program: StationProgram = {
        do {
            return try StationProgram(configuration: configuration)
        } catch {
            fatalError("the test station cannot encode its program: \(error)")
        }
    }()

    @Test("Every title change is seen, every audio byte kept, no block taken as short")
    func everyTitleAndTheAudio() async throws {
        let server = try await TestStationServer.start(Self.configuration, program: Self.program)
        let log = CollectedLog()
        let sink: CollectingSink
        do {
            sink = await Self.ingest(server.streamURL, logger: Logger(label: "hostile-titles") { _ in log })
            try await server.stop()
        } catch {
            try? await server.stop()
            throw error
        }
        #expect(sink.endReason == .endOfStream)

        let audioCount = Self.program.audioByteCount(from: 0, seconds: 24)
        let sent = StationTransmission.render(
            program: Self.program, metaint: Self.configuration.metaint, audioCount: audioCount,
            streamURL: Self.configuration.stationURL, hostileTitles: true)
        // Every kind, and the first ones again: as many changes as tracks played.
        #expect(sent.titles.count > HostileTitle.kindCount)
        let longest = HostileTitle.value(of: Self.configuration.titles[HostileTitle.kindCount - 1], kind: HostileTitle.kindCount - 1,
                                         url: Self.configuration.stationURL)
        #expect(StationTransmission.metadataBlock(titleBytes: longest, url: Self.configuration.stationURL).first == 255)
        let seen = sink.titles.map(\.info.raw)
        #expect(seen.count == sent.titles.count, "\(seen.count) title changes seen of \(sent.titles.count)")
        let sameTitles = seen == sent.titles.map(\.title)  // a Bool: a failure does not print 4 KB titles
        #expect(sameTitles, "titles differ from those sent: \(seen.map { InertText.render($0, maxUTF8Bytes: 80) })")
        #expect(sink.titles.map(\.position) == sent.titles.map(\.audioOffset))

        #expect(sink.audio.count * 100 >= sent.audio.count * 99, "\(sink.audio.count) of \(sent.audio.count) audio bytes kept")
        let sameAudio = sink.audio == sent.audio
        #expect(sameAudio, "the audio differs from what was sent")
        let realigned = log.lines.filter { $0.contains("shorter than its length byte") }
        #expect(realigned.isEmpty, "\(realigned.count) realignment warnings: \(realigned.first ?? "")")
    }

    @Test("record: a file for every track, names and log lines without a raw control character, no realignment")
    func record() async throws {
        let server = try await TestStationServer.start(Self.configuration, program: Self.program)
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result: AirtapBinary.Result
        do {
            result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", folder.path, "--log-level", "debug"])
            try await server.stop()
        } catch {
            try? await server.stop()
            throw error
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("shorter than its length byte"), "\(result.stderr)")
        let output = result.stderr + result.stdout
        let raw = output.unicodeScalars.filter { Self.isControl($0) && $0 != "\n" }
        #expect(raw.isEmpty, "raw control characters in the output: \(raw.map { $0.value })")
        let files = filesBelow(folder).filter { $0.hasSuffix(".mp3") }
        #expect(files.allSatisfy { !$0.unicodeScalars.contains(where: Self.isControl) }, "\(files.map { InertText.render($0) })")
        // Every track's title names a file (one per title change; the partial first and last in
        // incomplete/).
        for index in 0..<HostileTitle.kindCount {
            #expect(files.contains { $0.contains("Track \(index)") }, "no file for track \(index): \(files.map { InertText.render($0) })")
        }
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// One session to its end, logging to `logger`.
    static func ingest(_ url: String, logger: Logger) async -> CollectingSink {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let sink = CollectingSink()
        let station = Station(id: "hostile", name: "Hostile", urls: [url])
        let session = StationSession(station: station, loop: loop, options: IngestOptions(connectTimeout: 30, stallTimeout: 30),
                                     sinks: [sink], logger: logger)
        session.start()
        session.stop(.limitReached, after: 120)
        _ = await session.stopped()
        return sink
    }
}

/// Every message logged through it, at every level.
final class CollectedLog: LogHandler, Sendable {
    private let collected = Locked<[String]>([])

    var lines: [String] { collected.withLock { $0 } }

    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        collected.withLock { $0.append(event.message.description) }
    }
}
