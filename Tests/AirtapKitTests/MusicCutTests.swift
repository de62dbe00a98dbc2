@testable import AirtapCuts
@testable import AirtapIngest
@testable import AirtapKit
import AirtapTestSupport
import Foundation
import ICYWire
import Logging
@testable import TestStation
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

    /// Built once per machine (about 30 MB, 10-30 s of ffmpeg) and kept in the temporary folder
    /// for the next run (a change to tools/music-set/make needs a new folder name). Each process
    /// builds in a folder of its own and moves it into place; when another process got there
    /// first, or the shared folder is there but incomplete, the process keeps using its own.
    /// A task, so no test waits on a blocked thread.
    static let built = Task<Files, any Error> {
        let directory = try await buildOnce(tool: tool, folderName: "airtap-music-set-2", files: ["boundaries.tsv", "set.wav"])
        let table = try String(contentsOf: directory.appendingPathComponent("boundaries.tsv"), encoding: .utf8)
        let boundaries = try table.split(separator: "\n").map { line -> Boundary in
            let fields = line.split(separator: "\t")
            guard fields.count == 2, let seconds = Double(fields[1]) else { throw IcecastServer.Failure("bad boundary line '\(line)'") }
            return Boundary(kind: String(fields[0]), seconds: seconds)
        }
        guard boundaries.count == 12 else { throw IcecastServer.Failure("\(boundaries.count) boundaries, not 12") }
        return Files(directory: directory, boundaries: boundaries)
    }

    /// Runs `tool OUTDIR` once per machine (the result is kept in the temporary folder under
    /// `folderName` for the next run; a change to the tool needs a new name). Each process builds
    /// in a folder of its own and moves it into place; when another process got there first, or
    /// the shared folder is there but lacks one of `files`, the process keeps using its own.
    static func buildOnce(tool: URL, folderName: String, files: [String]) async throws -> URL {
        let temporary = FileManager.default.temporaryDirectory
        let shared = temporary.appendingPathComponent(folderName)
        let isComplete = { (folder: URL) in
            files.allSatisfy { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path) }
        }
        guard !isComplete(shared) else { return shared }
        let own = temporary.appendingPathComponent("\(folderName)-\(getpid())-\(UUID().uuidString)")
        do {
            try await run("/bin/bash", [tool.path, own.path])
        } catch {
            try? FileManager.default.removeItem(at: own)
            throw error
        }
        guard (try? FileManager.default.moveItem(at: own, to: shared)) == nil else { return shared }
        guard isComplete(shared) else { return own }
        try? FileManager.default.removeItem(at: own)
        return shared
    }

    /// The set encoded with ffmpeg, once per codec: `mp3` (LAME, 128 kbit/s) or `aac` (ADTS, 128 kbit/s).
    static let encodings: [String: Task<[UInt8], any Error>] = [
        "mp3": Task { try await encode("mp3") },
        "aac": Task { try await encode("aac") },
    ]

    static func encoded(_ codec: String) async throws -> [UInt8] {
        try await #require(encodings[codec]).value
    }

    private static func encode(_ codec: String) async throws -> [UInt8] {
        try await encode(codec, wav: "set.wav", in: try await built.value.directory)
    }

    /// `directory/wav` encoded as a station sends `codec`: `mp3` (LAME, 128 kbit/s) or `aac`
    /// (ADTS, 128 kbit/s), kept beside it for the next run.
    static func encode(_ codec: String, wav: String, in directory: URL) async throws -> [UInt8] {
        let output = directory.appendingPathComponent((wav as NSString).deletingPathExtension + ".\(codec)")
        if !FileManager.default.fileExists(atPath: output.path) {
            let partial = directory.appendingPathComponent("partial-\(UUID().uuidString).\(codec)")
            let arguments = codec == "mp3"
                ? ["-c:a", "libmp3lame", "-b:a", "128k", "-write_xing", "0", "-id3v2_version", "0", "-f", "mp3"]
                : ["-c:a", "aac", "-b:a", "128k", "-f", "adts"]
            let input = directory.appendingPathComponent(wav).path
            try await run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", input] + arguments + [partial.path])
            _ = try? FileManager.default.moveItem(at: partial, to: output)
            try? FileManager.default.removeItem(at: partial)
        }
        return Array(try Data(contentsOf: output))
    }

    /// Seconds the encoder adds before the first sample (LAME's 576 + 529, the AAC encoder's 1024).
    static func encoderDelay(_ codec: String) -> Double { codec == "mp3" ? 1105.0 / 44100 : 1024.0 / 44100 }

    /// Polled, not waitUntilExit: a blocked cooperative thread would stall the other tests.
    static func run(_ executable: String, _ arguments: [String]) async throws {
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

@Suite("Split: cuts in real music", .enabled(if: MusicSet.isAvailable, "tumiki-fighters-data or ffmpeg is not installed (tools/install-deps installs them)"),
       .timeLimit(.minutes(10)))
struct MusicCutTests {
    /// Near enough: a hard cut within 0.1 s, a fade in its middle half, a silence's cut inside the
    /// silence (1 s long). Asserted for silences. For the music itself the table
    /// (tools/music-set/table) says how near each kind comes, and this asserts that no cut is
    /// further off than that tolerance or than the title (plus 0.05 s: a cut falls between two
    /// frames, and the title's frame is not the boundary's), whichever is more.
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
