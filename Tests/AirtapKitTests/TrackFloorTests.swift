@testable import AirtapKit
import Foundation
import ICYWire
import Locking
import Logging
import Testing

/// The track floor against a title flood, with no network: ICY titles every five frames (0.13 s)
/// into the per-track recorder and into a `--single` cue sheet.
@Suite("Track floor: titles faster than a second of audio")
struct TrackFloorTests {
    typealias Gap = RecordingAcrossAGapTests

    /// Keeps the warnings a recorder logs.
    struct WarningCollector: LogHandler {
        let warnings: Locked<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
                 file: String, function: String, line: UInt) {
            if level == .warning { warnings.withLock { $0.append("\(message)") } }
        }
    }

    static let frames = 300
    static let framesPerTitle = 5

    /// A connection's head, then a new title every `framesPerTitle` frames, then the end.
    static func flood() throws -> [StreamEvent] {
        var events = [try Gap.head()]
        for start in stride(from: 0, to: frames, by: framesPerTitle) {
            events.append(Gap.title("Flood - \(start)", atFrame: start))
            events += Gap.packets(start..<(start + framesPerTitle))
        }
        return events + [.ended(.endOfStream)]
    }

    @Test("Per-track recorder: at most a file per second of audio, every frame kept, one warning")
    func recorderFlood() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let warnings = Locked<[String]>([])
        let logger = Logger(label: "floor") { _ in WarningCollector(warnings: warnings) }
        let recorder = TrackRecorder(station: Station(id: "flood", name: "Flood FM", urls: ["http://127.0.0.1:9/"]),
                                     options: RecordingOptions(outputDirectory: folder.path), logger: logger) { _ in }
        for event in try Self.flood() { try recorder.receive(event) }
        #expect(recorder.failure == nil)
        let tracks = recorder.recordedTracks
        let seconds = Double(Self.frames) * 1152 / 44100
        // The connection's first track (one title's worth), then files of at least a second.
        #expect(tracks.count <= 2 + Int(seconds), "\(tracks.count) files for \(Self.frames / Self.framesPerTitle) titles")
        #expect(tracks.dropFirst().dropLast().allSatisfy { $0.seconds >= 1 }, "\(tracks.map(\.seconds))")
        #expect(tracks.reduce(0) { $0 + $1.frameCount } == Self.frames, "every frame in a file")
        #expect(warnings.withLock { $0 }.count == 1, "\(warnings.withLock { $0 })")
        // A file is named by the last title that came before its cut.
        #expect(tracks.dropFirst().allSatisfy { $0.info?.artist == "Flood" })
    }

    @Test("Cue sheet: at most an entry per second of audio, the later title naming each, one warning")
    func cueSheetFlood() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let warnings = Locked<[String]>([])
        let logger = Logger(label: "floor") { _ in WarningCollector(warnings: warnings) }
        let path = folder.appendingPathComponent("show.mp3").path
        let recorder = SingleFileRecorder(path: path, station: Station(id: "flood", name: "Flood FM", urls: []), logger: logger) { _ in }
        for event in try Self.flood() { try recorder.receive(event) }
        #expect(recorder.failure == nil)
        let cue = try String(contentsOfFile: path + ".cue", encoding: .utf8)
        let entries = cue.split(separator: "\n").filter { $0.contains("TRACK ") }.count
        let seconds = Double(Self.frames) * 1152 / 44100
        #expect(entries >= 2 && entries <= 2 + Int(seconds), "\(entries) entries:\n\(cue)")
        #expect(cue.contains("TITLE \"\(Self.frames - Self.framesPerTitle)\""), "the last title names the last entry:\n\(cue)")
        #expect(warnings.withLock { $0 }.count == 1, "\(warnings.withLock { $0 })")
    }
}
