@testable import AirtapKit
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// The folder `StationCutTable` writes its measurements into (tools/music-set/station-table);
/// nil: it does not run.
private let stationTableFolder = ProcessInfo.processInfo.environment["AIRTAP_STATION_TABLE"].map { URL(fileURLWithPath: $0) }

/// bench/music-cuts.md's station tables, as JSON lines: the station programme through the split
/// search in process (`stationCuts`), MP3 and AAC, for a late, an early and a scattered station
/// (in-process.jsonl: one line per boundary with the title's, airtap's and the hand-tuned
/// error, one per run with the aligner's cost); and the same stations through a real Icecast2,
/// recorded at once by airtap and by streamripper tuned by hand (icecast.jsonl).
@Suite("Split: the station programme's table", .enabled(if: stationTableFolder != nil && StationProgramme.isAvailable),
       .timeLimit(.minutes(30)))
struct StationCutTable {
    static let stations: [(name: String, timing: TitleTiming)] = [
        ("late", TitleTiming(delay: 2.5)),
        ("early", TitleTiming(delay: -3)),
        ("scattered", TitleTiming(delay: 0, scatter: 5)),
    ]

    @Test func measureEveryStationKind() async throws {
        let path = try #require(stationTableFolder).appendingPathComponent("in-process.jsonl")
        var lines: [String] = []
        for codec in ["mp3", "aac"] {
            for station in Self.stations {
                let (cuts, statistics, cpuSeconds) = try await stationCuts(codec, timing: station.timing)
                for cut in cuts {
                    lines.append(Self.object([
                        ("row", "\"cut\""), ("codec", "\"\(codec)\""), ("station", "\"\(station.name)\""), ("index", "\(cut.index)"),
                        ("kind", "\"\(cut.kind)\""), ("length", "\(cut.length)"), ("title", "\(cut.titleError)"),
                        ("airtap", "\(cut.cutError)"), ("tuned", station.timing.scatter == nil ? "\(cut.tunedError)" : "null"),
                        ("placement", "\"\(cut.placement?.rawValue ?? "-")\""),
                    ]))
                }
                lines.append(Self.object([
                    ("row", "\"cost\""), ("codec", "\"\(codec)\""), ("station", "\"\(station.name)\""),
                    ("title_changes", "\(statistics.titleChanges)"), ("measured_frames", "\(statistics.measuredFrames)"),
                    ("cpu_seconds", "\(cpuSeconds)"), ("learned", statistics.titleDelay.map { "\($0.seconds)" } ?? "null"),
                ]))
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(to: path, atomically: true, encoding: .utf8)
    }

    /// A wider sample in process: steady stations 2 to 3.5 s late or early, each with three other
    /// jitter sequences than the table's, and twelve other scatterings of titles over ±5 s, each
    /// also cut without a delay (grid.jsonl, one line per boundary).
    @Test func measureManyStations() async throws {
        let path = try #require(stationTableFolder).appendingPathComponent("grid.jsonl")
        var lines: [String] = []
        for codec in ["mp3", "aac"] {
            for seed: UInt64 in 1...12 {
                let timing = TitleTiming(delay: 0, scatter: 5, seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 777)
                let cuts = try await stationCuts(codec, timing: timing).cuts
                let without = try await stationCuts(codec, timing: timing, titleDelay: .off).cuts
                for (cut, off) in zip(cuts, without) {
                    lines.append(Self.object([
                        ("row", "\"scatter\""), ("codec", "\"\(codec)\""), ("seed", "\(seed)"), ("index", "\(cut.index)"),
                        ("kind", "\"\(cut.kind)\""), ("title", "\(cut.titleError)"), ("airtap", "\(cut.cutError)"),
                        ("off", "\(off.cutError)"), ("placement", "\"\(cut.placement?.rawValue ?? "-")\""),
                    ]))
                }
            }
        }
        for codec in ["mp3", "aac"] {
            for delay in [2.0, 2.5, 3.0, -2.5, -3.0, -3.5] {
                for seed: UInt64 in [1, 7, 99] {
                    let timing = TitleTiming(delay: delay, seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 12_345)
                    for cut in try await stationCuts(codec, timing: timing).cuts {
                        lines.append(Self.object([
                            ("row", "\"grid\""), ("codec", "\"\(codec)\""), ("delay", "\(delay)"), ("seed", "\(seed)"),
                            ("index", "\(cut.index)"), ("kind", "\"\(cut.kind)\""), ("length", "\(cut.length)"),
                            ("title", "\(cut.titleError)"), ("airtap", "\(cut.cutError)"), ("tuned", "\(cut.tunedError)"),
                            ("right", "\(cut.isRight)"), ("placement", "\"\(cut.placement?.rawValue ?? "-")\""),
                        ]))
                    }
                }
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(to: path, atomically: true, encoding: .utf8)
    }

    /// streamripper's installed path, if any.
    static let streamripper = ["/usr/bin/streamripper", "/usr/local/bin/streamripper"].first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: IcecastServer.isAvailable && streamripper != nil))
    func measureThroughIcecast() async throws {
        let path = try #require(stationTableFolder).appendingPathComponent("icecast.jsonl")
        var lines: [String] = []
        for station in Self.stations {
            let programme = try await IcecastProgramme(timing: station.timing)
            let (airtap, streamripper) = try await Self.recordThroughIcecast(programme, timing: station.timing)
            for (cut, ripped) in zip(airtap, streamripper) {
                lines.append(Self.object([
                    ("row", "\"icecast\""), ("codec", "\"mp3\""), ("station", "\"\(station.name)\""), ("index", "\(cut.index)"),
                    ("kind", "\"\(cut.kind)\""), ("length", "\(cut.length)"), ("title", "\(cut.titleError)"),
                    ("airtap", "\(cut.cutError)"), ("tuned", station.timing.scatter == nil ? "\(cut.tunedError)" : "null"),
                    ("streamripper", ripped.map { "\($0)" } ?? "null"),
                ]))
            }
        }
        try (lines.joined(separator: "\n") + "\n").write(to: path, atomically: true, encoding: .utf8)
    }

    /// One run of the programme through Icecast2 (metaint 16000, six times real time) with two
    /// listeners: `airtap record --single` (defaults, learning from scratch) and streamripper
    /// tuned by hand to the station's true delay (its search off, `--xs_offset` the delay;
    /// a scattered station has none, so 0). Returns airtap's cuts and streamripper's cut errors
    /// (nil where it wrote no file starting there).
    static func recordThroughIcecast(_ programme: IcecastProgramme, timing: TitleTiming) async throws
        -> (airtap: [StationCut], streamripper: [Double?]) {
        let work = try AirtapBinary.temporaryFolder()
        let server = try await IcecastServer.start(metaint: 16_000)
        var children: [Process] = []
        defer {
            for child in children { ChildProcesses.terminate(child) }
            server.stop()
            try? FileManager.default.removeItem(at: work)
        }
        try """
            {"stations": [{"id": "table", "name": "Table FM", "url": "\(server.streamURL)"}]}
            """.write(to: work.appendingPathComponent("stations.json"), atomically: true, encoding: .utf8)
        let recording = work.appendingPathComponent("programme.mp3")
        let ripped = work.appendingPathComponent("streamripper")
        let delay = timing.scatter == nil ? timing.delay : 0
        try await programme.play(through: server, name: "Table FM", speed: 6, children: &children) {
            let airtap = try ChildProcesses.startAirtap(
                ["record", "table", "--single", recording.path, "--json", "--retries", "0", "--stall-timeout", "10m"],
                in: work, name: "record", environment: ["XDG_STATE_HOME": work.appendingPathComponent("state").path])
            let streamripper = Process()
            streamripper.executableURL = URL(fileURLWithPath: try #require(Self.streamripper))
            // One file per title, no tags (the files are the stream's frames), no reconnect (it
            // ends with the stream), a stall only after ten minutes.
            streamripper.arguments = [server.streamURL, "-d", ripped.path, "-s", "-i", "-o", "always", "-c", "-m", "600", "--quiet",
                                      "--xs_search_window=0:0", "--xs_silence_length=0", "--xs_padding=0:0",
                                      "--xs_offset=\(Int((-delay * 1000).rounded()))"]
            streamripper.currentDirectoryURL = work
            streamripper.standardInput = FileHandle.nullDevice
            streamripper.standardOutput = FileHandle.nullDevice
            streamripper.standardError = FileHandle.nullDevice
            try ChildProcesses.run(streamripper)
            return [airtap, streamripper]
        }
        for child in children {
            let ended = await ChildProcesses.waitForExit(child, timeout: .seconds(120))
            try #require(ended, "\(child.executableURL?.lastPathComponent ?? "a listener") did not end with the stream")
        }
        let airtap = try recordedCuts(programme, recording: recording, jsonOutput: work.appendingPathComponent("record.out"),
                                      trueDelay: delay)
        // streamripper names each file by its title; where a file starts is where it cut.
        var starts: [String: Double] = [:]
        for file in filesBelow(ripped) where file.hasSuffix(".mp3") {
            let audio = try [UInt8](Data(contentsOf: ripped.appendingPathComponent(file)))
            let name = URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent
            if let title = name.components(separatedBy: " - ").last, let start = programme.startSeconds(of: audio) { starts[title] = start }
        }
        let streamripper = programme.boundaries.enumerated().map { index, boundary in
            starts[IcecastProgramme.title(index + 1)].map { $0 - boundary.seconds }
        }
        return (airtap, streamripper)
    }

    private static func object(_ fields: [(String, String)]) -> String {
        "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
}
