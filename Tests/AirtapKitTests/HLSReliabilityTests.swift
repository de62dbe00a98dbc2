@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapStations
import AirtapTestSupport
@testable import CurlSource
import Foundation
@testable import ICYWire
@testable import Locking
import Logging
@testable import TestStation
import Testing

/// HLS as real servers and packagers send it when they are not at their best: placeholders for
/// titles, playlists of many thousands of segments, answers that fail once, variants that fail.
@Suite("HLS reliability")
struct HLSReliabilityTests {
    /// A session on `url` with `options`, stopped once `stopCondition` holds (or after `seconds`).
    static func session(_ url: String, options: IngestOptions = IngestOptions(connectTimeout: 30, stallTimeout: 30),
                        stopAfter seconds: Double = 120, logger: Logger = Logger(label: "test"),
                        stopOnce stopCondition: (@Sendable (CollectingSink) -> Bool)? = nil) async -> CollectingSink {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let sink = CollectingSink()
        let session = StationSession(station: Station(id: "hls", name: "HLS", urls: [url]), loop: loop, options: options,
                                     sinks: [sink], logger: logger)
        session.start()
        if let stopCondition {
            try? await waitFor("the condition to stop on", seconds: seconds) { stopCondition(sink) || sink.endReason != nil }
            session.stop(.limitReached)
        } else {
            session.stop(.limitReached, after: seconds)
        }
        await reportStall(await session.stopped(), url: url)
        return sink
    }

    static func frames(of sequence: Int, _ packager: HLSPackager, _ program: StationProgram) -> Int {
        Int((packager.segments[sequence].duration * Double(program.sampleRate) / Double(program.samplesPerFrame)).rounded())
    }

    @Test("`#EXTINF:6.4, no desc` on every segment (Unified Streaming's placeholder) is no title: only the timed titles arrive")
    func placeholderTitle() async throws {
        let packager = try await HLSStationTests.packager()
        let count = packager.segments.count
        let playlist = Array(packager.mediaPlaylist(window: 0..<count, endList: true)
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("#EXTINF:") ? "\($0) no desc" : String($0) }.joined(separator: "\n").utf8)
        #expect(String(decoding: playlist, as: UTF8.self).contains(", no desc\nseg0.mp3"))
        try await HLSStationTests.withScripted({ path in
            let name = String(path.dropFirst())
            if name == "index.m3u8" { return (200, "application/vnd.apple.mpegurl", playlist) }
            guard let sequence = (0..<count).first(where: { packager.segmentName($0) == name }) else { return nil }
            return (200, "audio/mpeg", packager.segmentBytes(sequence))
        }) { server, _ in
            let events = await Self.session(server.url("/index.m3u8"))
            #expect(events.endReason == .endOfStream)
            let program = try await HLSStationTests.program(.mp3)
            #expect(events.titles.map(\.info.raw) == program.tracks.map(\.title))
        }
    }

    @Test("-H Authorization, Cookie and X-Api-Key go to the station's own origin only, never to segments on another host")
    func userHeadersStayHome() async throws {
        let packager = try await HLSStationTests.packager()
        let seen = Locked<[(path: String, fields: [String])]>([])
        let names = ["Authorization", "Cookie", "X-Api-Key"]
        let server = try await ScriptedServer.startReadingHeaders(eventLoopGroup: HLSStationTests.loops) { request in
            seen.withLock { $0.append((request.path, names.filter { request.field($0) != nil })) }
            if request.path == "/index.m3u8" {
                // Host names differ, the port is the same: another origin.
                let port = request.field("Host")?.split(separator: ":").last.map(String.init) ?? "0"
                let text = "#EXTM3U\n#EXT-X-TARGETDURATION:\(packager.targetDuration)\n#EXTINF:1,\nseg0.mp3\n"
                    + "#EXTINF:1,\nhttp://localhost:\(port)/seg1.mp3\n#EXT-X-ENDLIST\n"
                return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: application/vnd.apple.mpegurl",
                                                                      "Content-Length: \(text.utf8.count)"]) + Array(text.utf8)), .close]
            }
            let body = packager.segmentBytes(request.path == "/seg0.mp3" ? 0 : 1)
            return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: audio/mpeg", "Content-Length: \(body.count)"]) + body), .close]
        }
        defer { Task { try? await server.stop() } }
        let options = IngestOptions(headers: ["Authorization: Bearer secret", "Cookie: session=secret", "X-Api-Key: secret"],
                                    connectTimeout: 30, stallTimeout: 30)
        let events = await Self.session(server.url("/index.m3u8"), options: options)
        #expect(events.endReason == .endOfStream)
        let requests = seen.withLock { $0 }
        #expect(requests.first { $0.path == "/index.m3u8" }?.fields == names, "\(requests)")
        #expect(requests.first { $0.path == "/seg0.mp3" }?.fields == names, "\(requests)")
        #expect(requests.first { $0.path == "/seg1.mp3" }?.fields == [], "\(requests)")
    }

    @Test("-H headers follow a redirect only within the station's origin: a segment or a station URL redirected to another host gets none")
    func userHeadersStayHomeThroughRedirects() async throws {
        let packager = try await HLSStationTests.packager()
        let seen = Locked<[(path: String, fields: [String])]>([])
        let names = ["Authorization", "Cookie", "X-Api-Key"]
        let server = try await ScriptedServer.startReadingHeaders(eventLoopGroup: HLSStationTests.loops) { request in
            seen.withLock { $0.append((request.path, names.filter { request.field($0) != nil })) }
            // Host names differ, the port is the same: another origin.
            let port = request.field("Host")?.split(separator: ":").last.map(String.init) ?? "0"
            func redirect(_ location: String) -> [ScriptedServer.Step] {
                [.send(ScriptedServer.head("HTTP/1.1 302 Found", ["Location: \(location)", "Content-Length: 0"])), .close]
            }
            switch request.path {
            case "/index.m3u8":
                let text = "#EXTM3U\n#EXT-X-TARGETDURATION:\(packager.targetDuration)\n#EXTINF:1,\nhome/seg0.mp3\n"
                    + "#EXTINF:1,\naway/seg1.mp3\n#EXT-X-ENDLIST\n"
                return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: application/vnd.apple.mpegurl",
                                                                      "Content-Length: \(text.utf8.count)"]) + Array(text.utf8)), .close]
            case "/home/seg0.mp3": return redirect("/seg0.mp3")
            case "/away/seg1.mp3": return redirect("http://localhost:\(port)/seg1.mp3")
            case "/go": return redirect("http://localhost:\(port)/live")
            default:
                let body = packager.segmentBytes(request.path == "/seg1.mp3" ? 1 : 0)
                return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: audio/mpeg", "Content-Length: \(body.count)"]) + body), .close]
            }
        }
        defer { Task { try? await server.stop() } }
        let options = IngestOptions(headers: ["Authorization: Bearer secret", "Cookie: session=secret", "X-Api-Key: secret"],
                                    connectTimeout: 30, stallTimeout: 30)
        let events = await Self.session(server.url("/index.m3u8"), options: options)
        #expect(events.endReason == .endOfStream)
        #expect(events.packets.count > 0)
        let icy = await Self.session(server.url("/go"), options: options)
        #expect(icy.packets.count > 0)
        let requests = seen.withLock { $0 }
        for path in ["/index.m3u8", "/home/seg0.mp3", "/seg0.mp3", "/away/seg1.mp3", "/go"] {
            #expect(requests.first { $0.path == path }?.fields == names, "\(path): \(requests)")
        }
        for path in ["/seg1.mp3", "/live"] {
            #expect(requests.first { $0.path == path }?.fields == [], "\(path): \(requests)")
        }
    }

    @Test("A VOD playlist of 10,000 segments (over 256 KiB, under the documented 4 MiB) is followed from its first segment")
    func longVODPlaylist() async throws {
        let packager = try await HLSStationTests.packager()
        let count = packager.segments.count
        var lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:\(packager.targetDuration)", "#EXT-X-PLAYLIST-TYPE:VOD"]
        for sequence in 0..<10_000 {
            lines += [String(format: "#EXTINF:%.3f,", packager.segments[sequence % count].duration), packager.segmentName(sequence)]
        }
        let playlist = Array((lines + ["#EXT-X-ENDLIST", ""]).joined(separator: "\n").utf8)
        #expect(playlist.count > 256 * 1024 && playlist.count < 4 << 20)
        try await HLSStationTests.withScripted({ path in
            let name = String(path.dropFirst())
            if name == "index.m3u8" { return (200, "application/vnd.apple.mpegurl", playlist) }
            guard name.hasPrefix("seg"), name.hasSuffix(".mp3"), let sequence = Int(name.dropFirst(3).dropLast(4)) else { return nil }
            return (200, "audio/mpeg", packager.segmentBytes(sequence))
        }) { server, requests in
            let program = try await HLSStationTests.program(.mp3)
            let wanted = Self.frames(of: 0, packager, program) + Self.frames(of: 1, packager, program)
            let events = await Self.session(server.url("/index.m3u8"), stopOnce: { $0.packets.count >= wanted })
            // A starved machine may look at the stop condition only after every segment was read:
            // either end is no error (a refused playlist would be one).
            #expect(events.endReason == .limitReached || events.endReason == .endOfStream, "\(String(describing: events.endReason))")
            #expect(events.packets.count >= wanted)
            #expect(requests.withLock { $0.prefix(2) } == ["/index.m3u8", "/seg0.mp3"])
        }
    }

    @Test("ffmpeg's fMP4 HLS whose init segment is answered once with an HTML error page (as a web page, and as 200 octet-stream): one segment lost, the rest plays, a clean end",
          arguments: ["text/html; charset=utf-8", "application/octet-stream"])
    func initSegmentAnsweredWithAWebPage(type: String) async throws {
        let folder = try await HLSStationTests.ffmpegHLS.value
        let initRequests = Locked(0)
        let page = Array("<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>".utf8)
        try await HLSStationTests.withScripted({ path in
            let name = String(path.dropFirst())
            if name == "init.mp4", initRequests.withLock({ count in count += 1; return count == 1 }) { return (200, type, page) }
            guard !name.contains("/"), let data = try? Data(contentsOf: folder.appendingPathComponent(name)) else { return nil }
            return (200, name.hasSuffix(".m3u8") ? "application/vnd.apple.mpegurl" : "application/octet-stream", [UInt8](data))
        }) { server, _ in
            let events = await Self.session(server.url("/fm.m3u8"))
            #expect(events.endReason == .endOfStream, "\(String(describing: events.endReason))")
            #expect(initRequests.withLock { $0 } == 2)
            // 5 s in segments of 2, 2 and 1 s: the first is lost with its init segment.
            let seconds = events.packets.map(\.duration).reduce(0, +)
            #expect(abs(seconds - 3) < 0.1, "\(seconds) s")
        }
    }

    /// ffmpeg's `-f hls` of 5 s of 440 Hz AAC in 2 s segments named `%d.aac`: MPEG-TS inside (the
    /// muxer's default segment type, whatever the names say). Made once, on a thread of its own.
    static let tsNamedAAC = SharedValue<URL> {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-ts-named-aac-\(getpid())")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try runFFmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=5:sample_rate=44100", "-c:a", "aac", "-b:a", "64k",
                       "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_segment_filename", "%d.aac", "live.m3u8"], in: folder)
        return folder
    }

    @Test("probe of ffmpeg's HLS with MPEG-TS in `.aac` segments says MPEG-TS (text and --json), from the bytes, not the names")
    func containerFromTheBytes() async throws {
        let folder = try await Self.tsNamedAAC.value
        let first = [UInt8](try Data(contentsOf: folder.appendingPathComponent("0.aac")))
        #expect(first.first == 0x47 && first.count % 188 == 0, "ffmpeg wrote MPEG-TS")
        try await HLSStationTests.withScripted({ path in
            let name = String(path.dropFirst())
            guard !name.contains("/"), let data = try? Data(contentsOf: folder.appendingPathComponent(name)) else { return nil }
            return (200, name.hasSuffix(".m3u8") ? "application/vnd.apple.mpegurl" : "audio/aac", [UInt8](data))
        }) { server, _ in
            let text = try await AirtapBinary.run(["probe", server.url("/live.m3u8")])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("hls       VOD, MPEG-TS, 2 s segments"), "\(text.stdout)")
            let json = try await AirtapBinary.run(["probe", server.url("/live.m3u8"), "--json"])
            let head = try #require(json.stdoutLines.first { $0.contains("\"event\":\"head\"") }, "\(json.stdout)")
            #expect(head.contains("\"hls_container\":\"MPEG-TS\""), "\(head)")
        }
    }

    /// Keeps the warnings a session logs.
    struct WarningCollector: LogHandler {
        let warnings: Locked<[String]>
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            if event.level == .warning { warnings.withLock { $0.append("\(event.message)") } }
        }
    }

    @Test("A master whose best variant fails (its playlist 404, or its segments 404): it is set aside, said in the log, and the next best plays every frame",
          arguments: ["playlist", "segments"])
    func variantFallback(failing: String) async throws {
        let packager = try await HLSStationTests.packager()
        let count = packager.segments.count
        let media = Array(packager.mediaPlaylist(window: 0..<count, endList: true).utf8)
        let master = Array(HLSPackager.masterPlaylist(variants: [
            (uri: "lo/index.m3u8", bandwidth: 32000, codecs: "mp4a.40.34"), (uri: "hi/index.m3u8", bandwidth: 128000, codecs: "mp4a.40.34"),
        ]).utf8)
        try await HLSStationTests.withScripted({ path in
            if path == "/master.m3u8" { return (200, "application/vnd.apple.mpegurl", master) }
            let parts = path.split(separator: "/").map(String.init)
            guard parts.count == 2, ["lo", "hi"].contains(parts[0]) else { return nil }
            if parts[1] == "index.m3u8" { return failing == "playlist" && parts[0] == "hi" ? nil : (200, "application/vnd.apple.mpegurl", media) }
            guard !(failing == "segments" && parts[0] == "hi"),
                  let sequence = (0..<count).first(where: { packager.segmentName($0) == parts[1] }) else { return nil }
            return (200, "audio/mpeg", packager.segmentBytes(sequence))
        }) { server, requests in
            let warnings = Locked<[String]>([])
            let logger = Logger(label: "test") { _ in WarningCollector(warnings: warnings) }
            let events = await Self.session(server.url("/master.m3u8"), logger: logger)
            #expect(events.endReason == .endOfStream, "\(String(describing: events.endReason))")
            let program = try await HLSStationTests.program(.mp3)
            #expect(events.packets.count == program.frameOffsets.count, "every frame, from the other variant")
            #expect(!events.all.contains { if case .discontinuity = $0 { true } else { false } })
            #expect(warnings.withLock { $0 }.contains { $0.hasPrefix("HLS variant set aside") }, "\(warnings.withLock { $0 })")
            let asked = requests.withLock { $0 }
            // The best was tried first, then set aside: asked once, not on every segment.
            #expect(asked.filter { $0.hasPrefix("/hi/") }.count == 1 + (failing == "segments" ? 1 : 0), "\(asked)")
        }
    }

    @Test("A live window of twelve 1 s segments under #EXT-X-TARGETDURATION:20, moving in real time: reloads keep up, no segment is lost")
    func windowFasterThanItsTargetDuration() async throws {
        let packager = try await HLSStationTests.packager()
        let started = ContinuousClock.now
        try await HLSStationTests.withScripted({ path in
            // The live edge moves on one 1 s segment a second; the window holds the last twelve.
            // A client that waited the 20 s target duration would lose eight of every twenty; one
            // that follows the segments keeps up through a stall of 10 s (a loaded machine).
            let edge = Int((ContinuousClock.now - started) / .seconds(1)) + 11
            let name = String(path.dropFirst())
            if name == "live.m3u8" {
                let text = packager.mediaPlaylist(window: max(0, edge - 11)..<edge + 1, endList: false)
                    .replacingOccurrences(of: "#EXT-X-TARGETDURATION:\(packager.targetDuration)", with: "#EXT-X-TARGETDURATION:20")
                return (200, "application/vnd.apple.mpegurl", Array(text.utf8))
            }
            guard name.hasPrefix("seg"), name.hasSuffix(".mp3"), let sequence = Int(name.dropFirst(3).dropLast(4)) else { return nil }
            return (200, "audio/mpeg", packager.segmentBytes(sequence))
        }) { server, requests in
            #expect(packager.targetDuration == 1)
            let events = await Self.session(server.url("/live.m3u8"), stopOnce: { sink in
                sink.packets.map(\.duration).reduce(0, +) >= 10
            })
            #expect(events.endReason == .limitReached, "\(String(describing: events.endReason))")
            #expect(events.packets.map(\.duration).reduce(0, +) >= 10)
            #expect(!events.all.contains { if case .discontinuity = $0 { true } else { false } }, "no segment lost")
            let fetched = requests.withLock { $0 }.compactMap { $0.hasPrefix("/seg") ? Int($0.dropFirst(4).dropLast(4)) : nil }
            #expect(fetched == Array((fetched.first ?? 0)..<(fetched.first ?? 0) + fetched.count), "\(fetched)")
        }
    }

    @Test("ffmpeg's MPEG-TS cut into a VOD playlist's segments inside PES packets (as VLC's livehttp cuts): every ADTS frame ffmpeg extracts; across a discontinuity tag nothing is carried",
          arguments: [false, true])
    func segmentsCutInsidePES(discontinuity: Bool) async throws {
        let folder = try await HLSStationTests.ffmpegHLS.value
        // ffmpeg's three HLS segments joined are one continuous transport stream.
        let stream = try ["ts0.ts", "ts1.ts", "ts2.ts"].flatMap { [UInt8](try Data(contentsOf: folder.appendingPathComponent($0))) }
        let segments = try #require(MidPESSegmenter.segments(stream, parts: 4))
        #expect(segments.count == 4)
        var lines = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", "#EXT-X-PLAYLIST-TYPE:VOD"]
        for index in segments.indices {
            if discontinuity, index == 2 { lines.append("#EXT-X-DISCONTINUITY") }
            lines += ["#EXTINF:1.25,", "cut\(index).ts"]
        }
        let playlist = Array((lines + ["#EXT-X-ENDLIST", ""]).joined(separator: "\n").utf8)
        try await HLSStationTests.withScripted({ path in
            if path == "/cut.m3u8" { return (200, "application/vnd.apple.mpegurl", playlist) }
            guard let index = segments.indices.first(where: { path == "/cut\($0).ts" }) else { return nil }
            return (200, "video/mp2t", segments[index])
        }) { server, _ in
            let whole = await Self.session(server.url("/cut.m3u8"))
            #expect(whole.endReason == .endOfStream)
            #expect(!whole.all.contains { if case .discontinuity = $0 { true } else { false } })
            let expected = try Self.ffmpegADTS(of: stream)
            if discontinuity {
                // The PES cut at the tagged boundary is lost (its two halves), a few frames and no more.
                let lost = expected.count - whole.audio.count
                #expect(lost > 0 && lost < 8 * 1024, "\(lost) bytes lost")
            } else {
                #expect(whole.audio.count == expected.count, "\(whole.audio.count) of \(expected.count) bytes")
                #expect(whole.audio == expected)
            }
        }
    }

    /// The ADTS stream ffmpeg extracts from an MPEG-TS stream.
    static func ffmpegADTS(of stream: [UInt8]) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-adts-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(stream).write(to: folder.appendingPathComponent("in.ts"))
        try runFFmpeg(["-i", "in.ts", "-c:a", "copy", "-f", "adts", "out.aac"], in: folder)
        return [UInt8](try Data(contentsOf: folder.appendingPathComponent("out.aac")))
    }

    @Test("A master of 200 variants that all answer 404: a bounded number tried, then one error, not a walk through all of them")
    func everyVariantFails() async throws {
        let master = Array(HLSPackager.masterPlaylist(variants: (0..<200).map {
            (uri: "v\($0)/index.m3u8", bandwidth: 1000 * ($0 + 1), codecs: "mp4a.40.34")
        }).utf8)
        try await HLSStationTests.withScripted({ path in
            path == "/master.m3u8" ? (200, "application/vnd.apple.mpegurl", master) : nil
        }) { server, requests in
            let events = await Self.session(server.url("/master.m3u8"))
            guard case .error(.playlist(_, let reason)) = events.endReason else {
                Issue.record("expected a playlist error, got \(String(describing: events.endReason))")
                return
            }
            #expect(reason.contains("404"), "\(reason)")
            let asked = requests.withLock { $0 }
            // The master, the best variant, then the next best eight times (HLSFeed.maxVariantSwitches).
            #expect(asked.count == 1 + 1 + 8, "\(asked)")
            #expect(asked.dropFirst().first == "/v199/index.m3u8", "the best first")
        }
    }
}
