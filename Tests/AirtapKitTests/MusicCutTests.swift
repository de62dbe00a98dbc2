@testable import AirtapKit
import Foundation
import ICYWire
import Logging
import TestStation
import Testing

// MARK: The real-music set

/// Real music (tools/music-set/make: the Tumiki Fighters soundtrack from Debian's
/// tumiki-fighters-data) joined by hard cuts, crossfades and silences, encoded as a station
/// would send it. Built once per test process.
enum MusicSet {
    struct Boundary: Sendable {
        let kind: String
        let seconds: Double
    }

    struct Files: Sendable {
        let directory: URL
        let boundaries: [Boundary]
    }

    /// Where `MusicCutTable` writes its measurements; nil: it does not run.
    static let tablePath = ProcessInfo.processInfo.environment["AIRTAP_MUSIC_TABLE"]
    static let tool = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("tools/music-set/make")
    static var isAvailable: Bool {
        FileManager.default.isReadableFile(atPath: "/usr/share/games/tumiki-fighters/sounds/panic_on_meadow.ogg")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")
    }

    /// Built once per machine (about 40 MB, 30 s of ffmpeg), kept in the temporary folder for the
    /// next run (a change to tools/music-set/make needs a new folder name): each process builds in
    /// a folder of its own and renames it into place. A task, so no test waits on a blocked thread.
    static let built = Task<Files, any Error> {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-music-set-1")
        if !FileManager.default.fileExists(atPath: directory.appendingPathComponent("boundaries.tsv").path) {
            let own = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-music-\(getpid())-\(UUID().uuidString)")
            try await run("/bin/bash", [tool.path, own.path])
            // Another process may have put its set there first: the same files, so either will do.
            if (try? FileManager.default.moveItem(at: own, to: directory)) == nil { try? FileManager.default.removeItem(at: own) }
        }
        let table = try String(contentsOf: directory.appendingPathComponent("boundaries.tsv"), encoding: .utf8)
        let boundaries = table.split(separator: "\n").compactMap { line -> Boundary? in
            let fields = line.split(separator: "\t")
            guard fields.count == 2, let seconds = Double(fields[1]) else { return nil }
            return Boundary(kind: String(fields[0]), seconds: seconds)
        }
        return Files(directory: directory, boundaries: boundaries)
    }

    /// The set encoded with ffmpeg: `mp3` (LAME, 128 kbit/s) or `aac` (ADTS, 128 kbit/s).
    static func encoded(_ codec: String) async throws -> [UInt8] {
        let files = try await built.value
        let output = files.directory.appendingPathComponent("set.\(codec)")
        if !FileManager.default.fileExists(atPath: output.path) {
            let partial = files.directory.appendingPathComponent("partial-\(UUID().uuidString).\(codec)")
            let arguments = codec == "mp3"
                ? ["-c:a", "libmp3lame", "-b:a", "128k", "-write_xing", "0", "-id3v2_version", "0", "-f", "mp3"]
                : ["-c:a", "aac", "-b:a", "128k", "-f", "adts"]
            let input = files.directory.appendingPathComponent("set.wav").path
            try await run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", input] + arguments + [partial.path])
            _ = try? FileManager.default.moveItem(at: partial, to: output)
            try? FileManager.default.removeItem(at: partial)
        }
        return Array(try Data(contentsOf: output))
    }

    /// Seconds the encoder adds before the first sample (LAME's 576 + 529, the AAC encoder's 1024).
    static func encoderDelay(_ codec: String) -> Double { codec == "mp3" ? 1105.0 / 44100 : 1024.0 / 44100 }

    /// Polled, not waitUntilExit: a blocked cooperative thread would stall the other tests.
    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        try ChildProcesses.run(process)
        defer { ChildProcesses.terminate(process) }
        while process.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        guard process.terminationStatus == 0 else { throw IcecastServer.Failure("\(executable) \(arguments.first ?? "") failed") }
    }
}

/// One boundary's outcome: where the title arrived and where airtap cut, seconds from the boundary.
struct MusicCut: Sendable {
    let kind: String
    let offset: Double
    let titleError: Double
    let cutError: Double
}

/// Frames the encoded set, sends a title at each boundary plus `offset` seconds, runs the split
/// search (`window` seconds a side) through the real decoder, and measures each cut.
func musicCuts(_ codec: String, offset: Double, window: Double = 8) async throws -> [MusicCut] {
    let files = try await MusicSet.built.value
    let bytes = try await MusicSet.encoded(codec)
    var framer = AudioFramer()
    var packets: [Packet] = []
    let events = framer.push(bytes) + framer.finish()
    for case .packet(let packet) in events { packets.append(packet) }
    #expect(packets.count > 1000)
    var starts: [Double] = []
    var time = -MusicSet.encoderDelay(codec)
    for packet in packets {
        starts.append(time)
        time += packet.duration
    }

    let first = TrackChange(info: TrackInfo(streamTitle: "Set - 0"), position: 0, source: .icy)
    var input: [StreamEvent] = [.metadata(first)]
    var pending: [(at: Double, title: String)] = []
    for (index, boundary) in files.boundaries.enumerated() {
        pending.append((boundary.seconds + offset, "Set - \(index + 1)"))
    }
    var next = 0
    for (index, packet) in packets.enumerated() {
        while next < pending.count, pending[next].at <= starts[index] {
            let change = TrackChange(info: TrackInfo(streamTitle: pending[next].title), position: packet.position, source: .icy)
            input.append(.metadata(change))
            next += 1
        }
        input.append(.packet(packet))
    }
    input.append(.ended(.endOfStream))
    let options = SplitOptions(windowBefore: window, windowAfter: window)
    let out = try align(input, options).0
    var startByPosition: [Int: Double] = [:]
    for (index, packet) in packets.enumerated() { startByPosition[packet.position] = starts[index] }
    var cuts: [MusicCut] = []
    for (index, boundary) in files.boundaries.enumerated() {
        let change = try #require(out.title("Set - \(index + 1)"))
        let cut = try #require(startByPosition[change.position])
        let announced = try #require(startByPosition[change.announcedPosition])
        cuts.append(MusicCut(kind: boundary.kind, offset: offset, titleError: announced - boundary.seconds,
                             cutError: cut - boundary.seconds))
    }
    return cuts
}

@Suite("Split: cuts in real music", .enabled(if: MusicSet.isAvailable, "tumiki-fighters-data or ffmpeg is not installed (tools/install-deps installs them)"))
struct MusicCutTests {
    /// Near enough: a hard cut within 0.1 s, a fade in its middle half, a silence's cut inside the
    /// silence (1 s long). Asserted for silences; for the music itself the table
    /// (tools/music-set/table) says how near each kind comes, and this asserts that no cut is
    /// worse than the title's position by more than that tolerance.
    static let tolerance: [String: Double] = ["cut": 0.1, "fade3": 0.75, "fade6": 1.5, "silence": 0.5]

    @Test(arguments: ["mp3", "aac"], [-5.0, 0, 5])
    func silencesWinAndNoCutIsWorseThanTheTitle(codec: String, offset: Double) async throws {
        for cut in try await musicCuts(codec, offset: offset) {
            let error: Double = abs(cut.cutError)
            let tolerance: Double = Self.tolerance[cut.kind] ?? 0.1
            let titleError: Double = abs(cut.titleError) + 0.05
            let allowed: Double = max(tolerance, titleError)
            if cut.kind == "silence" { #expect(error <= tolerance, "\(codec) \(cut)") }
            #expect(error <= allowed, "never worse than the title: \(codec) \(cut)")
        }
    }
}

/// The table in the README (tools/music-set/table runs this): every boundary kind at every title
/// offset, airtap's cut error against the title's, written as JSON lines to $AIRTAP_MUSIC_TABLE.
@Suite("Split: the real-music table", .enabled(if: MusicSet.tablePath != nil && MusicSet.isAvailable))
struct MusicCutTable {
    @Test func measureEveryKindAtEveryOffset() async throws {
        let path = try #require(MusicSet.tablePath)
        var lines: [String] = []
        for codec in ["mp3", "aac"] {
            for offset in [-5.0, -3, -1, 0, 1, 3, 5] {
                for cut in try await musicCuts(codec, offset: offset) {
                    let fields: [String] = ["\"codec\":\"\(codec)\"", "\"kind\":\"\(cut.kind)\"", "\"offset\":\(offset)",
                                            "\"title\":\(cut.titleError)", "\"airtap\":\(cut.cutError)"]
                    lines.append("{" + fields.joined(separator: ",") + "}")
                }
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}
