import AirtapIngest
import AirtapKit
import AirtapStations
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
import NIOPosix
@testable import TestStation
import Testing

/// HLS stations through the same ingest as ICY ones: the test station's packed audio, MPEG-TS and
/// fMP4 variants (MP3 and AAC, plain and AES-128), titles in timed ID3 and in the playlist, VOD
/// and live, and hostile playlists and segments.
@Suite("HLS stations")
struct HLSStationTests {
    static let titles = ["Alpha Artist - First Song", "Beta Artist - Second Song", "Gamma - Third Song"]

    /// The HLS servers' own event loops: on the shared singleton they would wait behind the fast
    /// ICY stations other tests serve as fast as sockets take it, past a segment's deadline on a
    /// loaded machine.
    static let loops = MultiThreadedEventLoopGroup(numberOfThreads: 2)

    static func configuration(_ codec: StationCodec) -> StationConfiguration {
        var configuration = StationConfiguration(bitrate: 64, trackSeconds: 3, gapSeconds: 1, pace: .fast, titles: titles)
        configuration.codec = codec
        return configuration
    }

    /// Encoded once per codec, on a thread of their own, and shared (LAME and ffmpeg take a moment).
    static let programs: [StationCodec: SharedValue<StationProgram>] = [
        .mp3: SharedValue { try StationProgram(configuration: configuration(.mp3)) },
        .aac: SharedValue { try StationProgram(configuration: configuration(.aac)) },
    ]

    static func program(_ codec: StationCodec) async throws -> StationProgram {
        let shared = try #require(programs[codec])
        return try await shared.value
    }

    /// A test station serving `/hls/` as asked; `lowBitrate` adds a second variant.
    static func withHLS<T>(_ codec: StationCodec, _ container: HLSPackager.Container, titles: HLSPackager.TitlePlacement = .timedID3,
                           isVOD: Bool = true, isEncrypted: Bool = false, segmentSeconds: Double = 1, lowBitrate: Bool = false,
                           _ body: (TestStationServer, StationProgram) async throws -> T) async throws -> T {
        let program = try await program(codec)
        var programs = [(program: program, bitrate: 64)]
        if lowBitrate {
            var low = configuration(codec)
            low.bitrate = 32
            programs.append((try await StationProgram.encoding(low), 32))
        }
        let site = try HLSSite.make(programs: programs, codec: codec, container: container, titles: titles,
                                    segmentSeconds: segmentSeconds, isVOD: isVOD, isEncrypted: isEncrypted)
        let server = try await TestStationServer.start(configuration(codec), program: program, eventLoopGroup: loops, hls: site)
        do {
            let result = try await body(server, program)
            try await server.stop()
            return result
        } catch {
            try? await server.stop()
            throw error
        }
    }

    /// Timeouts with room: the test stations share event loops with every fast station of the
    /// suite, and on a loaded machine an answer can wait seconds.
    static func session(_ url: String, options: IngestOptions = IngestOptions(connectTimeout: 30, stallTimeout: 30),
                        stopAfter seconds: Double = 60) async -> CollectingSink {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let sink = CollectingSink()
        let session = StationSession(station: Station(id: "hls", name: "HLS", urls: [url]), loop: loop, options: options,
                                     sinks: [sink], logger: Logger(label: "test"))
        session.start()
        session.stop(.limitReached, after: seconds)
        await reportStall(await session.stopped(), url: url)
        return sink
    }

    /// Seconds of audio in the packets before `position`.
    static func seconds(before position: Int, in packets: [Packet]) -> Double {
        packets.lazy.filter { $0.position < position }.map(\.duration).reduce(0, +)
    }

    /// Every frame once and in order, each title once at its track's start (a title may come up
    /// to one segment late, as real packagers stamp it), then a clean end.
    static func expectWholeLoop(_ events: CollectingSink, _ program: StationProgram, segmentSeconds: Double,
                                sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(events.endReason == .endOfStream, sourceLocation: sourceLocation)
        let packets = events.packets
        #expect(packets.count == program.frameOffsets.count, "every frame of the loop once", sourceLocation: sourceLocation)
        let contiguous = zip(packets, packets.dropFirst()).allSatisfy { $0.position + $0.bytes.count == $1.position }
        #expect(contiguous, "positions contiguous", sourceLocation: sourceLocation)
        let titles = events.titles
        #expect(titles.map(\.info.raw) == program.tracks.map(\.title), sourceLocation: sourceLocation)
        var trackStart = 0.0
        for (title, track) in zip(titles, program.tracks) {
            let at = seconds(before: title.position, in: packets)
            #expect(at >= trackStart - 0.05 && at <= trackStart + segmentSeconds + 0.05,
                    "\(title.info.raw) at \(at) s, its track starts at \(trackStart) s", sourceLocation: sourceLocation)
            trackStart += track.seconds
        }
    }

    @Test("A VOD playlist of every container and codec, plain and AES-128: every frame once, every timed title at its track, then a clean end",
          arguments: [StationCodec.mp3, .aac], HLSPackager.Container.allCases)
    func wholeLoop(codec: StationCodec, container: HLSPackager.Container) async throws {
        for isEncrypted in [false, true] {
            try await Self.withHLS(codec, container, isEncrypted: isEncrypted) { server, program in
                let events = await Self.session(server.url(path: "/hls/master.m3u8"))
                Self.expectWholeLoop(events, program, segmentSeconds: 1)
                #expect(events.titles.allSatisfy { $0.source == .timedMetadata || $0.source == .id3 })
                #expect(events.formats.first?.codec == (codec == .aac ? .aac : .mp3))
            }
        }
    }

    @Test("Titles in the playlist (#EXTINF title=\"...\",artist=\"...\" and #EXTINF:N,Artist - Title) take effect at their segment",
          arguments: [HLSPackager.TitlePlacement.playlistAttributes, .playlistArtistTitle], [HLSPackager.Container.packedAudio, .mpegTS])
    func playlistTitles(placement: HLSPackager.TitlePlacement, container: HLSPackager.Container) async throws {
        try await Self.withHLS(.aac, container, titles: placement) { server, program in
            let events = await Self.session(server.url(path: "/hls/64k/index.m3u8"))
            Self.expectWholeLoop(events, program, segmentSeconds: 1)
        }
    }

    @Test("A master playlist of two bitrates: the highest by default, the best at or under --max-bitrate when given")
    func variantChoice() async throws {
        try await Self.withHLS(.mp3, .packedAudio, lowBitrate: true) { server, _ in
            let master = server.url(path: "/hls/master.m3u8")
            let best = await Self.session(master)
            #expect(best.heads.first?.url.contains("/hls/64k/") == true, "\(best.heads)")
            let capped = await Self.session(master, options: IngestOptions(connectTimeout: 30, stallTimeout: 30, maxBitrate: 48_000))
            #expect(capped.heads.first?.url.contains("/hls/32k/") == true, "\(capped.heads)")
            #expect(capped.endReason == .endOfStream)
        }
    }

    @Test("A live playlist: record cuts a file per track in the silences, named by the timed titles, and --for ends it with exit 0")
    func recordLive() async throws {
        try await Self.withHLS(.aac, .mpegTS, isVOD: false) { server, _ in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try await AirtapBinary.run(["record", server.url(path: "/hls/master.m3u8"), "--out", folder.path, "--for", "30s"])
            #expect(result.status == 0, "\(result.stderr)")
            let files = try FileManager.default.subpathsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".aac") }
            let complete = files.filter { !$0.contains("incomplete/") }
            #expect(!complete.isEmpty, "\(files)\n\(result.stderr)")
            for path in complete {
                let name = (path as NSString).lastPathComponent
                // A title heard again is numbered: "Title (2).aac".
                let title = name.replacing(/\ \(\d+\)\.aac$/, with: ".aac")
                #expect(Self.titles.contains { title == "\($0).aac" }, "\(name)")
                // 3 s of tone and 1 s of silence per track: a cut in each silence makes every whole track 4 s.
                let contents = try RecordedFileContents(path: folder.appendingPathComponent(path).path)
                let seconds = Double(contents.audio.count) / 8000
                #expect(abs(seconds - 4) < 1, "\(name): about \(seconds) s")
            }
            #expect(!result.stderr.contains("level=warning"), "\(result.stderr)")
        }
    }

    @Test("record of a VOD playlist from its first segment: every track whole, the first and the last too (none in incomplete/), named by the timed titles; exit 0 at its end")
    func recordVOD() async throws {
        try await Self.withHLS(.aac, .mpegTS) { server, _ in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try await AirtapBinary.run(["record", server.url(path: "/hls/master.m3u8"), "--out", folder.path])
            #expect(result.status == 0, "\(result.stderr)")
            let files = try FileManager.default.subpathsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".aac") }
            #expect(!files.contains { $0.contains("incomplete/") }, "\(files)\n\(result.stderr)")
            let names = Set(files.map { ($0 as NSString).lastPathComponent })
            #expect(names == Set(Self.titles.map { "\($0).aac" }), "\(files)\n\(result.stderr)")
        }
    }

    @Test("play: a VOD playlist of fMP4 AAC into an ALSA file device, gapless across segments: every frame heard, each track's tone on pitch")
    func play() async throws {
        try await Self.withHLS(.aac, .fmp4) { server, program in
            let wav = try AirtapBinary.temporaryFolder().appendingPathComponent("out.wav").path
            let result = try await AirtapBinary.run(["play", server.url(path: "/hls/master.m3u8"), "--device", "file:'\(wav)',wav",
                                                     "--buffer", "0.5s", "--retries", "0"])
            #expect(result.status == 0, "\(result.stderr)")
            let audio = try WAVAudio(path: wav)
            let perPacket = PlayAACTests.outputFramesPerPacket(program, outputRate: audio.sampleRate)
            #expect(audio.frameCount == program.frameOffsets.count * perPacket)
            PlayAACTests.expectTones(audio, program: program, perPacket: perPacket)
            #expect(result.stderr.contains("title: \(Self.titles[1])"), "\(result.stderr)")
        }
    }

    @Test("relay --to FILE: a VOD playlist of packed MP3 becomes the station's frames, exactly, and a cue sheet of its titles")
    func relayToFile() async throws {
        try await Self.withHLS(.mp3, .packedAudio) { server, program in
            let path = try AirtapBinary.temporaryFolder().appendingPathComponent("show.mp3").path
            let result = try await AirtapBinary.run(["relay", server.url(path: "/hls/master.m3u8"), "--to", path])
            #expect(result.status == 0, "\(result.stderr)")
            let contents = try RecordedFileContents(path: path)
            #expect(contents.audio == program.loop, "every frame once, no segment's ID3 tag among them")
            let cue = try String(contentsOfFile: path + ".cue", encoding: .utf8)
            #expect(cue.components(separatedBy: "INDEX 01").count - 1 == program.tracks.count, "\(cue)")
        }
    }

    @Test("serve: a live HLS station reaches an ICY listener as MP3 frames with icy-metaint, its timed titles as StreamTitle")
    func serveAsICY() async throws {
        try await Self.withHLS(.mp3, .mpegTS, isVOD: false) { server, _ in
            let serve = try AirtapChild(serving: [server.url(path: "/hls/master.m3u8"), "--listen", "127.0.0.1:0"])
            let port = try await serve.listeningPort()
            let listener = try await RelayTestListener.connect(port: port, metadata: true)
            func heard() -> (metaint: Int?, titles: [String], audio: [UInt8]) {
                let received = listener.received
                guard let head = received.head,
                      let line = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("icy-metaint:") }),
                      let metaint = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) else { return (nil, [], []) }
                var demuxer = ICYDemuxer(metaint: metaint)
                var titles: [String] = [], audio: [UInt8] = []
                for output in demuxer.consume(received.body) {
                    switch output {
                    case .audio(let bytes): audio += bytes
                    case .metadata(let block):
                        if let title = StreamMetadata.parse(block.bytes).streamTitle, !title.isEmpty, title != titles.last { titles.append(title) }
                    }
                }
                return (metaint, titles, audio)
            }
            // A title changes every 4 s of a real-time stream: two changes within a minute, even three times slower.
            try await waitFor("two titles at the listener", seconds: 60) { heard().titles.count >= 2 }
            let (metaint, titles, audio) = heard()
            #expect(metaint != nil)
            #expect(titles.allSatisfy { Self.titles.contains($0) }, "\(titles)")
            var framer = AudioFramer()
            let frames = (framer.push(audio) + framer.finish()).filter { if case .packet = $0 { true } else { false } }.count
            #expect(frames > 38 * 4, "\(frames) frames")
            #expect(framer.skippedByteCount < 1500, "\(framer.skippedByteCount) bytes between frames")
            await listener.close()
            #expect(try await serve.terminate() == 0, "\(serve.stderr)")
        }
    }

    @Test("probe says it is HLS, the variants and the one chosen, the segment length (text and --json); --max-bitrate picks the lower one")
    func probeVariant() async throws {
        try await Self.withHLS(.mp3, .packedAudio, lowBitrate: true) { server, _ in
            let master = server.url(path: "/hls/master.m3u8")
            let best = try await AirtapBinary.run(["probe", master])
            #expect(best.status == 0, "\(best.stderr)")
            #expect(best.stdout.contains("/hls/64k/"), "\(best.stdout)")
            #expect(best.stdout.contains("hls       VOD, packed audio, 1 s segments"), "\(best.stdout)")
            #expect(best.stdout.contains("variant   64 kbps (mp4a.40.34)  <- chosen"), "\(best.stdout)")
            #expect(best.stdout.contains("variant   32 kbps (mp4a.40.34)\n"), "\(best.stdout)")
            let capped = try await AirtapBinary.run(["probe", master, "--max-bitrate", "48"])
            #expect(capped.status == 0, "\(capped.stderr)")
            #expect(capped.stdout.contains("/hls/32k/"), "\(capped.stdout)")
            let json = try await AirtapBinary.run(["probe", master, "--json"])
            let head = try #require(json.stdoutLines.first { $0.contains("\"event\":\"head\"") }, "\(json.stdout)")
            #expect(head.contains("\"transport\":\"hls\"") && head.contains("\"hls_chosen_bandwidth\":64000")
                    && head.contains("\"hls_live\":false"), "\(head)")
        }
    }

    @Test("HLS written by ffmpeg's own muxer (AAC in MPEG-TS, AAC in fMP4, MP3 in MPEG-TS), from a plain file server: the whole 5 s, then a clean end",
          arguments: ["ts.m3u8", "fm.m3u8", "mp3.m3u8"])
    func ffmpegMuxer(playlist: String) async throws {
        let folder = try await Self.ffmpegHLS.value
        try await Self.withScripted({ path in
            let file = folder.appendingPathComponent(String(path.dropFirst()))
            guard !path.dropFirst().contains("/"), let data = try? Data(contentsOf: file) else { return nil }
            return (200, path.hasSuffix(".m3u8") ? "application/vnd.apple.mpegurl" : "application/octet-stream", [UInt8](data))
        }) { server, _ in
            let events = await Self.session(server.url("/\(playlist)"))
            #expect(events.endReason == .endOfStream)
            let seconds = events.packets.map(\.duration).reduce(0, +)
            // 5 s of tone; the encoder's priming and last partial frame add well under a tenth.
            #expect(abs(seconds - 5) < 0.1, "\(seconds) s")
            #expect(events.formats.first?.codec == (playlist == "mp3.m3u8" ? .mp3 : .aac))
        }
    }

    /// ffmpeg's `-f hls` output of 5 s of 440 Hz in 2 s segments, made once per test process, on
    /// a thread of its own.
    static let ffmpegHLS = SharedValue<URL> {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-kit-ffmpeg-hls-\(getpid())")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let tone = ["-f", "lavfi", "-i", "sine=frequency=440:duration=5:sample_rate=44100"]
        let hls = ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod"]
        for arguments in [
            tone + ["-c:a", "aac", "-b:a", "64k"] + hls + ["-hls_segment_type", "mpegts", "-hls_segment_filename", "ts%d.ts", "ts.m3u8"],
            tone + ["-c:a", "aac", "-b:a", "64k"] + hls
                + ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4", "-hls_segment_filename", "f%d.m4s", "fm.m3u8"],
            tone + ["-c:a", "libmp3lame", "-b:a", "64k"] + hls + ["-hls_segment_filename", "m%d.ts", "mp3.m3u8"],
        ] {
            try runFFmpeg(arguments, in: folder)
        }
        return folder
    }

    @Test("30 HLS stations under a 64-descriptor limit (enough to start following, not to go on): one clear line and exit 3, not a run of lost segments")
    func outOfDescriptors() async throws {
        try await Self.withHLS(.mp3, .packedAudio, isVOD: false) { server, _ in
            let ids = (0..<30).map { "h\($0)" }
            let entries = ids.enumerated().map { "{\"id\": \"\($1)\", \"url\": \"\(server.url(path: "/hls/master.m3u8"))?\($0)\"}" }
            let folder = try AirtapBinary.temporaryFolder(with: "{\"stations\": [\(entries.joined(separator: ","))]}")
            defer { try? FileManager.default.removeItem(at: folder) }
            let result = try await AirtapBinary.run(["record"] + ids + ["--for", "30s", "--out", "out"], in: folder, limits: ["--nofile=64"])
            #expect(result.status == 3, "\(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("airtap: ") }
            #expect(lines.count == 1 && lines[0].lowercased().contains("too many open files"), "\(result.stderr)")
            #expect(!result.stderr.contains("HLS segment"), "\(result.stderr)")
        }
    }

    // MARK: Hostile

    /// A scripted HLS server: `answers` maps a path to a status, a content type and a body.
    static func withScripted(_ answers: @escaping @Sendable (String) -> (status: Int, type: String, body: [UInt8])?,
                             _ body: (ScriptedServer, Locked<[String]>) async throws -> Void) async throws {
        let requests = Locked<[String]>([])
        let server = try await ScriptedServer.start(eventLoopGroup: loops) { path in
            requests.withLock { $0.append(path) }
            guard let answer = answers(path) else {
                return [.send(ScriptedServer.head("HTTP/1.1 404 Not Found", ["Content-Length: 0"])), .close]
            }
            let status = answer.status == 200 ? "HTTP/1.1 200 OK" : "HTTP/1.1 \(answer.status) Status"
            return [.send(ScriptedServer.head(status, ["Content-Type: \(answer.type)", "Content-Length: \(answer.body.count)"]) + answer.body),
                    .close]
        }
        defer { Task { try? await server.stop() } }
        try await body(server, requests)
    }

    static func packager() async throws -> HLSPackager {
        try HLSPackager(program: try await program(.mp3), codec: .mp3, container: .packedAudio, titles: .timedID3, segmentSeconds: 1)
    }

    @Test("A master playlist that points at another master playlist: one clear error, exit 2, no loop")
    func masterOfMasters() async throws {
        let master = Array("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=64000\nmaster.m3u8\n".utf8)
        try await Self.withScripted({ path in path == "/master.m3u8" ? (200, "application/vnd.apple.mpegurl", master) : nil }) { server, requests in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try await AirtapBinary.run(["record", server.url("/master.m3u8"), "--out", folder.path, "--retries", "0"])
            #expect(result.status == 2, "\(result.stderr)")
            let errorLines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("airtap: ") }
            #expect(errorLines.count == 1 && errorLines[0].contains("another master playlist"), "\(result.stderr)")
            #expect(requests.withLock { $0.count } <= 4)
        }
    }

    @Test("A live playlist that never moves, with a target duration of 0: reloads at the clamped pace, never a busy loop, then one line and exit 2")
    func frozenPlaylist() async throws {
        let packager = try await Self.packager()
        var frozen = packager.mediaPlaylist(window: 0..<3, endList: false)
        frozen = frozen.replacingOccurrences(of: "#EXT-X-TARGETDURATION:\(packager.targetDuration)", with: "#EXT-X-TARGETDURATION:0")
        let playlist = Array(frozen.utf8)
        try await Self.withScripted({ path in
            let name = String(path.dropFirst())
            if name == "index.m3u8" { return (200, "application/vnd.apple.mpegurl", playlist) }
            guard let sequence = (0..<3).first(where: { packager.segmentName($0) == name }) else { return nil }
            return (200, "audio/mpeg", packager.segmentBytes(sequence))
        }) { server, requests in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try await AirtapBinary.run(["record", server.url("/index.m3u8"), "--out", folder.path, "--retries", "0"])
            #expect(result.status == 2, "\(result.stderr)")
            let errorLines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("airtap: ") }
            #expect(errorLines.count == 1 && errorLines[0].contains("no new segment"), "\(result.stderr)")
            // Clamped to 1 s, reloaded every half second when unchanged, stalled after 6: about a dozen loads.
            let reloads = requests.withLock { $0.filter { $0 == "/index.m3u8" }.count }
            #expect(reloads >= 5 && reloads <= 30, "\(reloads) playlist loads")
        }
    }

    @Test("A segment that trickles in just above the stall rate is given up at its deadline (30 s), not waited on to its end")
    func tricklingSegment() async throws {
        let playlist = Array("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nslow.mp3\n#EXT-X-ENDLIST\n".utf8)
        let segmentAsked = Locked<ContinuousClock.Instant?>(nil)
        // 100 s of drip: a session that waited for the segment would end after it.
        let server = try await ScriptedServer.start(eventLoopGroup: Self.loops) { path in
            guard path == "/index.m3u8" else {
                segmentAsked.withLock { $0 = $0 ?? .now }
                return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: audio/mpeg"])),
                        .drip([UInt8](repeating: 0, count: 40_000), perSecond: 400), .close]
            }
            return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: application/vnd.apple.mpegurl",
                                                                  "Content-Length: \(playlist.count)"]) + playlist), .close]
        }
        defer { Task { try? await server.stop() } }
        let events = await Self.session(server.url("/index.m3u8"), options: IngestOptions(connectTimeout: 30, stallTimeout: 60), stopAfter: 300)
        guard case .error(.stream(_, let reason)) = events.endReason else {
            Issue.record("expected a stream error, got \(String(describing: events.endReason))")
            return
        }
        #expect(reason.contains("took longer than 30 s"), "\(reason)")
        // Both ends stamped on their own threads (the server's loop, the session's), not on this task's.
        let asked = try #require(segmentAsked.withLock { $0 }), ended = try #require(events.endedAt)
        #expect(ended - asked < .seconds(90))
    }

    @Test("Byte-range segments from a server that ignores Range (200, the whole file): each segment is its range, every frame once")
    func byteRangesIgnored() async throws {
        let packager = try await Self.packager()
        let count = packager.segments.count
        var whole: [UInt8] = []
        var lines = ["#EXTM3U", "#EXT-X-VERSION:4", "#EXT-X-TARGETDURATION:\(packager.targetDuration)"]
        for sequence in 0..<count {
            let bytes = packager.segmentBytes(sequence)
            lines += ["#EXTINF:\(packager.segments[sequence].duration),", "#EXT-X-BYTERANGE:\(bytes.count)@\(whole.count)", "all.mp3"]
            whole += bytes
        }
        let playlist = Array((lines + ["#EXT-X-ENDLIST", ""]).joined(separator: "\n").utf8)
        let file = whole
        try await Self.withScripted({ path in
            path == "/index.m3u8" ? (200, "application/vnd.apple.mpegurl", playlist) : path == "/all.mp3" ? (200, "audio/mpeg", file) : nil
        }) { server, requests in
            let events = await Self.session(server.url("/index.m3u8"))
            #expect(events.endReason == .endOfStream)
            let frames = try await Self.program(.mp3).frameOffsets.count
            #expect(events.packets.count == frames)
            #expect(requests.withLock { $0.filter { $0 == "/all.mp3" }.count } == count)
        }
    }

    @Test("The station's password goes only to its own host: segments on another host get no Authorization")
    func credentialsStayHome() async throws {
        let packager = try await Self.packager()
        let seen = Locked<[(path: String, authorized: Bool)]>([])
        let server = try await ScriptedServer.startReadingHeaders(eventLoopGroup: Self.loops) { request in
            seen.withLock { $0.append((request.path, request.field("Authorization") != nil)) }
            if request.path == "/index.m3u8" {
                // Host names differ, the port is the same: another origin.
                let port = request.field("Host")?.split(separator: ":").last.map(String.init) ?? "0"
                let text = "#EXTM3U\n#EXT-X-TARGETDURATION:\(packager.targetDuration)\n#EXTINF:1,\nhttp://localhost:\(port)/seg0.mp3\n#EXT-X-ENDLIST\n"
                return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: application/vnd.apple.mpegurl",
                                                                      "Content-Length: \(text.utf8.count)"]) + Array(text.utf8)), .close]
            }
            let body = packager.segmentBytes(0)
            return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: audio/mpeg", "Content-Length: \(body.count)"]) + body), .close]
        }
        defer { Task { try? await server.stop() } }
        let url = server.url("/index.m3u8").replacingOccurrences(of: "http://", with: "http://listener:secret@")
        let events = await Self.session(url)
        #expect(events.endReason == .endOfStream)
        let requests = seen.withLock { $0 }
        #expect(requests.first { $0.path == "/index.m3u8" }?.authorized == true, "\(requests)")
        #expect(requests.first { $0.path == "/seg0.mp3" }?.authorized == false, "\(requests)")
    }

    @Test("A station URL that redirects: the playlist's relative URIs resolve where it was finally fetched from; a key that fails once costs one segment")
    func redirectAndPassingKeyFailure() async throws {
        let packager = try await Self.packager()
        let count = packager.segments.count
        let playlist = Array(packager.mediaPlaylist(window: 0..<count, endList: true).utf8)
        let keyRequests = Locked(0)
        try await Self.withScripted({ path in
            switch path {
            case "/start.m3u8": return (302, "text/plain\r\nLocation: /live/index.m3u8", [])
            case "/live/index.m3u8": return (200, "application/vnd.apple.mpegurl", playlist)
            default:
                let name = path.hasPrefix("/live/") ? String(path.dropFirst("/live/".count)) : ""
                guard let sequence = (0..<count).first(where: { packager.segmentName($0) == name }) else { return nil }
                return (200, "audio/mpeg", packager.segmentBytes(sequence))
            }
        }) { server, _ in
            let events = await Self.session(server.url("/start.m3u8"))
            #expect(events.endReason == .endOfStream)
            let frames = try await Self.program(.mp3).frameOffsets.count
            #expect(events.packets.count == frames)
        }
        // The same playlist with every segment under one key whose first fetch fails.
        var keyed = packager.mediaPlaylist(window: 0..<count, endList: true)
        if let first = keyed.range(of: "#EXTINF") { keyed.insert(contentsOf: "#EXT-X-KEY:METHOD=AES-128,URI=\"key\"\n", at: first.lowerBound) }
        let keyedPlaylist = Array(keyed.utf8)
        let key = [UInt8](repeating: 7, count: 16)
        try await Self.withScripted({ path in
            switch path {
            case "/index.m3u8": return (200, "application/vnd.apple.mpegurl", keyedPlaylist)
            case "/key":
                let first = keyRequests.withLock { count in
                    count += 1
                    return count == 1
                }
                return first ? (503, "text/plain", Array("busy".utf8)) : (200, "application/octet-stream", key)
            default:
                let name = String(path.dropFirst())
                guard let sequence = (0..<count).first(where: { packager.segmentName($0) == name }) else { return nil }
                guard let encrypted = HLSSegmentEncryption.encrypt(packager.segmentBytes(sequence), key: key,
                                                                   iv: HLSSegmentEncryption.iv(forSequence: sequence)) else { return nil }
                return (200, "audio/mpeg", encrypted)
            }
        }) { server, _ in
            let events = await Self.session(server.url("/index.m3u8"))
            #expect(events.endReason == .endOfStream)
            let gaps = events.all.filter { if case .discontinuity = $0 { true } else { false } }
            #expect(gaps.count <= 1, "one segment lost at most: \(gaps)")
            let program = try await Self.program(.mp3)
            let frames = Int((packager.segments[0].duration * Double(program.sampleRate) / Double(program.samplesPerFrame)).rounded())
            #expect(events.packets.count == program.frameOffsets.count - frames, "all but the first segment")
            #expect(keyRequests.withLock { $0 } == 2)
        }
    }

    @Test("Lost segments (a 404, a web page instead of media) are a gap: a discontinuity where audio is missing, never a corrupt frame, and the rest plays")
    func lostSegments() async throws {
        let packager = try await Self.packager()
        let count = packager.segments.count
        let playlist = Array(packager.mediaPlaylist(window: 0..<count, endList: true).utf8)
        let missing = packager.segmentName(2), html = packager.segmentName(5)
        try await Self.withScripted({ path in
            let name = String(path.dropFirst())
            if name == "index.m3u8" { return (200, "application/vnd.apple.mpegurl", playlist) }
            if name == missing { return nil }
            if name == html { return (200, "text/html", Array("<html><body>gone</body></html>".utf8)) }
            guard let sequence = (0..<count).first(where: { packager.segmentName($0) == name }) else { return nil }
            return (200, "audio/mpeg", packager.segmentBytes(sequence))
        }) { server, _ in
            let events = await Self.session(server.url("/index.m3u8"))
            #expect(events.endReason == .endOfStream)
            let gaps = events.all.filter { if case .discontinuity = $0 { true } else { false } }
            #expect(gaps.count == 2, "\(gaps)")
            let program = try await Self.program(.mp3)
            let frames = { (sequence: Int) in
                Int((packager.segments[sequence].duration * Double(program.sampleRate) / Double(program.samplesPerFrame)).rounded())
            }
            let expected = program.frameOffsets.count - frames(2) - frames(5)
            #expect(events.packets.count == expected)
            #expect(events.packets.allSatisfy { MP3FrameHeader($0.bytes) != nil })
        }
    }

    @Test("Hostile playlists: 10 MB of one line, a key that is a web page, a key that redirects to file://, a key of 64 bytes, an init segment of 2 MiB: bounded, one line, exit 2")
    func hostilePlaylists() async throws {
        let longLine = Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 10 << 20)
        let key = Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-KEY:METHOD=AES-128,URI=\"key\"\n#EXTINF:1,\nseg0.mp3\n#EXT-X-ENDLIST\n".utf8)
        let redirectedKey = Array(key.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            Array(line) == Array("#EXT-X-KEY:METHOD=AES-128,URI=\"key\"".utf8) ? Array("#EXT-X-KEY:METHOD=AES-128,URI=\"redirect\"".utf8) : Array(line)
        }.joined(separator: [UInt8(ascii: "\n")]))
        let longKey = Array(String(decoding: key, as: UTF8.self).replacingOccurrences(of: "URI=\"key\"", with: "URI=\"long-key\"").utf8)
        let largeMap = Array("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:1,\nseg0.m4s\n#EXT-X-ENDLIST\n".utf8)
        let cases: [(String, [UInt8], String)] = [
            ("/long.m3u8", longLine, "larger than"), ("/key.m3u8", key, "key"), ("/redirect.m3u8", redirectedKey, "key"),
            ("/long-key.m3u8", longKey, "the key is longer than 16 bytes"),
            ("/large-map.m3u8", largeMap, "the init segment is larger than 1 MiB"),
        ]
        try await Self.withScripted({ path in
            switch path {
            case "/long.m3u8": return (200, "application/vnd.apple.mpegurl", longLine)
            case "/key.m3u8": return (200, "application/vnd.apple.mpegurl", key)
            case "/redirect.m3u8": return (200, "application/vnd.apple.mpegurl", redirectedKey)
            case "/long-key.m3u8": return (200, "application/vnd.apple.mpegurl", longKey)
            case "/large-map.m3u8": return (200, "application/vnd.apple.mpegurl", largeMap)
            case "/long-key": return (200, "application/octet-stream", Array(repeating: 7, count: 64))
            case "/init.mp4": return (200, "video/mp4", Array(repeating: 0, count: 2 << 20))
            case "/redirect": return (302, "text/plain\r\nLocation: file:///etc/passwd", [])
            case "/key": return (200, "text/html", Array("<html>login</html>".utf8))
            case "/seg0.mp3": return (200, "audio/mpeg", Array(repeating: 0, count: 4096))
            default: return nil
            }
        }) { server, _ in
            for (path, _, expected) in cases {
                let folder = try AirtapBinary.temporaryFolder()
                let result = try await AirtapBinary.run(["record", server.url(path), "--out", folder.path, "--retries", "0"])
                #expect(result.status == 2, "\(path): \(result.stderr)")
                let errorLines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("airtap: ") }
                #expect(errorLines.count == 1 && errorLines[0].contains(expected), "\(path): \(result.stderr)")
            }
        }
    }
}
