import AirtapIngest
@testable import AirtapKit
@testable import AirtapStations
import AirtapSupport
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
import TestStation
import Testing

/// A local file or standard input as a station: the same pipeline, recorder, prober and player
/// as a network station's, real files made by ffmpeg.
@Suite("Local streams: a file or stdin as a station")
struct LocalStreamTests {
    /// An MP3 file of `seconds` of tone whose ID3 tag names it, in `folder`.
    static func mp3(_ name: String, seconds: Int, in folder: URL) throws -> URL {
        try runFFmpeg(["-f", "lavfi", "-i", "sine=f=440:d=\(seconds)", "-c:a", "libmp3lame", "-b:a", "128k",
                       "-metadata", "artist=Local Artist", "-metadata", "title=Local Song", name], in: folder)
        return folder.appendingPathComponent(name)
    }

    static func duration(of file: URL) async throws -> Double {
        let text = try await toolOutput("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", file.path])
        return Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// An ADTS file's seconds from its frames, which ffprobe counts (its duration guesses from the bitrate).
    static func adtsDuration(of file: URL) async throws -> Double {
        let text = try await toolOutput("/usr/bin/ffprobe", ["-v", "error", "-count_packets", "-show_entries", "stream=sample_rate,nb_read_packets",
                                                             "-of", "csv=p=0", file.path])
        let fields = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Double($0) }
        guard fields.count == 2, fields[0] > 0 else { return -1 }
        return fields[1] * 1024 / fields[0]
    }

    @Test("record FILE: one complete track, named from the file's ID3 tag, in a folder named after the file, as long as the file")
    func recordFile() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try Self.mp3("show.mp3", seconds: 12, in: folder)
        let result = try await AirtapBinary.run(["record", "./show.mp3", "--out", "out"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let track = folder.appendingPathComponent("out/show/Local Artist - Local Song.mp3")
        #expect(FileManager.default.fileExists(atPath: track.path), "\(result.stderr)")
        #expect(abs(try await Self.duration(of: track) - 12) < 0.1)
    }

    @Test("record - through a pipe: the same track, kept as incomplete (a pipe may begin mid-song, as a station does)")
    func recordStandardInput() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = try Self.mp3("piped.mp3", seconds: 6, in: folder)
        let result = try await AirtapBinary.run(["record", "-", "--out", folder.appendingPathComponent("out").path],
                                                in: folder, pipedInput: source)
        #expect(result.status == 0, "\(result.stderr)")
        let track = folder.appendingPathComponent("out/stdin/incomplete/Local Artist - Local Song.mp3")
        #expect(FileManager.default.fileExists(atPath: track.path), "\(result.stderr)")
        #expect(abs(try await Self.duration(of: track) - 6) < 0.1)
    }

    @Test("record a chained Ogg file: one track per link, each named from its own comments")
    func chainedOgg() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, frequency, artist, title) in [("a.ogg", 440, "First", "One"), ("b.ogg", 660, "Second", "Two")] {
            try runFFmpeg(["-f", "lavfi", "-i", "sine=f=\(frequency):d=5", "-c:a", "libvorbis",
                           "-metadata", "artist=\(artist)", "-metadata", "title=\(title)", name], in: folder)
        }
        let chained = try Data(contentsOf: folder.appendingPathComponent("a.ogg")) + Data(contentsOf: folder.appendingPathComponent("b.ogg"))
        try chained.write(to: folder.appendingPathComponent("chain.ogg"))
        let result = try await AirtapBinary.run(["record", "file://" + folder.appendingPathComponent("chain.ogg").path, "--out", "out"],
                                                in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("out/chain").path)
            .filter { $0.hasSuffix(".ogg") }.sorted()
        #expect(names == ["First - One.ogg", "Second - Two.ogg"], "\(result.stderr)")
    }

    /// Three tracks of AAC tones in MPEG-TS, each title in timed ID3 where its track starts, as
    /// one continuous file (a live HLS stream saved segment after segment).
    static func transportStream() throws -> (bytes: [UInt8], titles: [String], seconds: Double) {
        let titles = ["Alpha Artist - First Song", "Beta Artist - Second Song", "Gamma - Third Song"]
        var configuration = StationConfiguration(bitrate: 64, trackSeconds: 3, gapSeconds: 1, pace: .fast, titles: titles)
        configuration.codec = .aac
        let program = try StationProgram(configuration: configuration)
        let packager = try HLSPackager(program: program, codec: .aac, container: .mpegTS, titles: .timedID3OnChange, segmentSeconds: 1)
        return (packager.segments.indices.flatMap { packager.segmentBytes($0) }, titles, program.loopSeconds)
    }

    @Test("record a file of MPEG-TS, named .ts or (as ffmpeg names HLS segments) .aac: the AAC inside, a complete track per timed-ID3 title",
          arguments: ["saved.ts", "saved.aac"])
    func transportStreamFile(name: String) async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let stream = try Self.transportStream()
        try Data(stream.bytes).write(to: folder.appendingPathComponent(name))
        let result = try await AirtapBinary.run(["record", "./" + name, "--out", "out"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("MPEG-TS"), "\(result.stderr)")
        let station = folder.appendingPathComponent("out/saved")
        let names = try FileManager.default.contentsOfDirectory(atPath: station.path).filter { $0.hasSuffix(".aac") }.sorted()
        #expect(names == stream.titles.map { "\($0).aac" }, "\(result.stderr)")
        var seconds = 0.0
        for name in names { seconds += try await Self.adtsDuration(of: station.appendingPathComponent(name)) }
        #expect(abs(seconds - stream.seconds) < 0.1, "\(seconds) s of \(stream.seconds) s")
    }

    @Test("probe an ADTS file: where it was read from, the codec, the end of the stream")
    func probeAAC() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try runFFmpeg(["-f", "lavfi", "-i", "sine=f=440:d=4", "-c:a", "aac", "-b:a", "96k", "-f", "adts", "tone.aac"], in: folder)
        let result = try await AirtapBinary.run(["probe", "tone.aac"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdoutLines
        #expect(lines.contains { $0.hasPrefix("status    read from /") && $0.hasSuffix("/tone.aac") }, "\(lines)")
        #expect(lines.contains("codec     AAC, 44100 Hz, mono"), "\(lines)")
        #expect(lines.contains("ended     end of stream"), "\(lines)")
    }

    @Test("play FILE goes at the pace it plays: a file longer than the player's queue loses nothing to it")
    func playPaced() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // 60 s: past the player's queue (its buffer and 15 s), so a file read at once would
        // overflow it at the start and drop packets.
        _ = try Self.mp3("long.mp3", seconds: 60, in: folder)
        let result = try await AirtapBinary.run(["play", "./long.mp3", "--device", "null", "--for", "4s"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("dropped packets=0"), "\(result.stderr)")
    }

    @Test("record a FIFO: waiting for its writer holds nothing up (--for ends the wait), and what a writer sends is recorded")
    func fifo() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = try Self.mp3("piped.mp3", seconds: 6, in: folder)
        let fifo = folder.appendingPathComponent("fifo.mp3")
        try #require(mkfifo(fifo.path, 0o600) == 0)
        let idle = try await AirtapBinary.run(["record", "./fifo.mp3", "--out", "idle", "--for", "1s"], in: folder)
        #expect(idle.status == 0, "\(idle.stderr)")
        // A writer: its open waits for airtap's, then it sends the file and closes.
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "cat -- \"$0\" >\"$1\"", source.path, fifo.path]
        try ChildProcesses.spawn(writer)
        let result = try await AirtapBinary.run(["record", "./fifo.mp3", "--out", "out"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let track = folder.appendingPathComponent("out/fifo/incomplete/Local Artist - Local Song.mp3")
        #expect(FileManager.default.fileExists(atPath: track.path), "\(result.stderr)")
        #expect(abs(try await Self.duration(of: track) - 6) < 0.1)
    }

    @Test("relay FILE --to - into a pipe that fails: exit 3 and its line, even when the file was read to its end first; --to a device or folder: exit 1")
    func relayWriteFailure() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try Self.mp3("short.mp3", seconds: 12, in: folder)
        // Standard output is a file here; the size limit makes its writes fail after 20 kB.
        let result = try await AirtapBinary.run(["relay", "./short.mp3", "--to", "-"], in: folder, limits: ["--fsize=20000"])
        #expect(result.status == 3, "\(result.stderr)")
        let last = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("airtap: cannot write to the output: "), "\(result.stderr)")
        // A device or folder as FILE is refused before anything is written beside it.
        for target in ["/dev/null", folder.path] {
            let refused = try await AirtapBinary.run(["relay", "./short.mp3", "--to", target], in: folder)
            #expect(refused.status == 1, "\(refused.stderr)")
            #expect(refused.stderr.contains("is not a regular file: use --to - and redirect"), "\(refused.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: "/dev/null (2)"))
    }

    @Test("A bad local stream: one line and its exit code, nothing recorded",
          arguments: [("missing.mp3", Int32(3), "cannot read "), ("folder.mp3", 3, "it is a folder"),
                      ("noise.mp3", 2, "it holds no audio frames airtap can read"), ("empty.ogg", 2, "it is empty"),
                      ("file://elsewhere/x.mp3", 1, "is not a file URL"),
                      ("file:///dev/zero", 2, "no audio frames airtap can read in its first 4 MiB")])
    func badInput(argument: String, status: Int32, message: String) async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("folder.mp3"), withIntermediateDirectories: true)
        var random = SystemRandomNumberGenerator()
        try Data((0..<100_000).map { _ in UInt8.random(in: 0...255, using: &random) }).write(to: folder.appendingPathComponent("noise.mp3"))
        try Data().write(to: folder.appendingPathComponent("empty.ogg"))
        let path = argument.contains("://") ? argument : "./" + argument
        let result = try await AirtapBinary.run(["record", path, "--out", "out"], in: folder)
        #expect(result.status == status, "\(result.stderr)")
        let last = result.stderr.split(separator: "\n").last.map(String.init) ?? ""
        #expect(last.hasPrefix("airtap: ") && last.contains(message), "\(result.stderr)")
        let recorded = FileManager.default.enumerator(atPath: folder.appendingPathComponent("out").path)?
            .compactMap { $0 as? String }.filter { $0.hasSuffix(".mp3") || $0.hasSuffix(".ogg") } ?? []
        #expect(recorded.isEmpty)
    }

    @Test("What names a local stream: -, a file URL, a path with an audio extension; a station's id wins")
    func parsing() throws {
        #expect(try LocalStream.parse("-") == .standardInput)
        #expect(try LocalStream.parse("file:///music/a%20b.mp3") == .file("/music/a b.mp3"))
        #expect(try LocalStream.parse("show.OGG", currentFolder: "/home/u") == .file("/home/u/show.OGG"))
        #expect(try LocalStream.parse("../x/show.opus", currentFolder: "/home/u") == .file("/home/x/show.opus"))
        #expect(try LocalStream.parse("groovesalad") == nil)
        #expect(try LocalStream.parse("list.m3u") == nil)
        #expect(try LocalStream.parse("http://host/stream.mp3") == nil)
        #expect(throws: AirtapError.self) { try LocalStream.parse("file://host/x.mp3") }
        let station = Station(localStream: .file("/music/show.mp3"))
        #expect(station.localStream == .file("/music/show.mp3"))
        #expect(station.name == "show" && station.id.hasPrefix("show-"))
        #expect(Station(localStream: .file("/other/show.mp3")).id != station.id)
        let catalog = StationCatalog(stations: [Station(id: "news.mp3", name: "News", urls: ["http://127.0.0.1:1/news"])], source: nil)
        #expect(try catalog.resolve("news.mp3").id == "news.mp3")
        #expect(try catalog.resolve("other.mp3").localStream != nil)
    }

    @Test("A file faster than its lossless sink: the reading waits while the sink's queue is full, and not a packet is lost")
    func backpressure() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // 120 s: about 4600 frames. The stuck sink's queue holds at most what its drain took
        // before it stuck (one batch) and 1024 more, far fewer.
        let file = try Self.mp3("long.mp3", seconds: 120, in: folder)
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let direct = CollectingSink()
        let gated = GatedSink()
        let queue = QueuedSink(gated, label: "gated")
        let session = LocalStreamSession(station: Station(localStream: .file(file.path)), stream: .file(file.path), loop: loop,
                                         pacesFiles: false, sinks: [direct, queue], logger: Logger(label: "test"))
        session.start()
        try await waitFor("the stuck sink's queue to be full") { queue.isCongested }
        let readWhenFull = direct.packets.count
        // More loop turns than the file has chunks (30): unpaused, the whole file would be read by now.
        for _ in 0..<60 {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in loop.schedule(after: 0) { done.resume() } }
        }
        let readWhileFull = direct.packets.count
        // One chunk (64 KiB, about 160 frames) may have been on its way when the queue filled.
        #expect(readWhileFull - readWhenFull <= 200, "read \(readWhileFull - readWhenFull) packets more with the sink stuck")
        #expect(readWhileFull < 4000, "read \(readWhileFull) packets with the sink stuck")
        gated.open()
        #expect(await session.stopped() == .endOfStream)
        queue.drain()
        #expect(direct.packets.count > readWhileFull)
        #expect(gated.packets.map(\.position) == direct.packets.map(\.position))
        #expect(gated.packets.flatMap(\.bytes) == direct.audio)
    }
}

/// A sink stuck in its first `receive` until the test opens it: a disk that stopped.
final class GatedSink: StreamSink, Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let received = Locked<[Packet]>([])

    func receive(_ event: StreamEvent) throws {
        gate.wait()
        gate.signal()
        if case .packet(let packet) = event { received.withLock { $0.append(packet) } }
    }

    func open() { gate.signal() }

    var packets: [Packet] { received.withLock { $0 } }
}
