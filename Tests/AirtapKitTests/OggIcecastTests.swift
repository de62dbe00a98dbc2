import AirtapTestSupport
import Foundation
@testable import ICYWire
@testable import TestStation
import Testing

/// airtap against a real Icecast2 fed by Debian's ezstream, which sends a playlist of .ogg and
/// .opus files unchanged, one chained link per file: the way real Ogg stations look.
@Suite("Real Icecast2 with ezstream (Ogg)")
struct OggIcecastTests {
    static let ezstream = "/usr/bin/ezstream"
    static var isAvailable: Bool { IcecastServer.isAvailable && FileManager.default.isExecutableFile(atPath: ezstream) }
    /// Vorbis, Opus, Vorbis: a codec change at each link. ezstream plays from the moment it
    /// starts; the first link is the airtap children's time to join (they start when the mount
    /// is live: the event), long enough for a machine three times slower than a busy CI runner.
    /// The last link is the late serve listener's time to join (it joins once serve has relayed
    /// the third link: the event), as long as the first for the same reason.
    static let files: [File] = [
        File(name: "one.ogg", codec: "libvorbis", title: "Alpha Ω", frequency: 440, seconds: 20),
        File(name: "two.opus", codec: "libopus", title: "Beta – Zwei", frequency: 660, seconds: 3),
        File(name: "three.ogg", codec: "libvorbis", title: "Gamma", frequency: 880, seconds: 3),
        File(name: "four.opus", codec: "libopus", title: "Delta", frequency: 990, seconds: 20),
    ]

    struct File {
        let name: String, codec: String, title: String, frequency: Int, seconds: Int
    }

    static func encode(_ file: File, into folder: URL) async throws {
        try await onOwnThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            process.arguments = ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=\(file.frequency):duration=\(file.seconds)",
                                 "-ac", "2", "-c:a", file.codec, "-metadata", "title=\(file.title)", "-metadata", "artist=Ezstream",
                                 "-y", folder.appendingPathComponent(file.name).path]
            try ChildProcesses.run(process)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw IcecastServer.Failure("ffmpeg could not make \(file.name)") }
        }
    }

    @Test("record, play and serve at once: one file per link (Vorbis and Opus alternating) with the link's title, each complete one decoding cleanly at its length; play follows the titles and writes audio; a late serve listener gets the link's BOS first, whole pages, no metaint",
          .enabled(if: OggIcecastTests.isAvailable, "icecast2, ffmpeg or ezstream is not installed (tools/install-deps installs them)"),
          .waitingForChildren)
    func record() async throws {
        let work = try AirtapBinary.temporaryFolder()
        for file in Self.files { try await Self.encode(file, into: work) }
        let playlist = work.appendingPathComponent("playlist.txt")
        try Self.files.map { work.appendingPathComponent($0.name).path }.joined(separator: "\n").write(to: playlist, atomically: true, encoding: .utf8)

        let server = try await IcecastServer.start()
        let config = work.appendingPathComponent("ezstream.xml")
        try """
            <ezstream>
              <servers><server><hostname>127.0.0.1</hostname><port>\(server.port)</port>
                <password>\(IcecastServer.sourcePassword)</password></server></servers>
              <streams><stream><mountpoint>\(IcecastServer.mount)</mountpoint><format>Ogg</format></stream></streams>
              <intakes><intake><type>playlist</type><filename>\(playlist.path)</filename><stream_once>1</stream_once></intake></intakes>
            </ezstream>
            """.write(to: config, atomically: true, encoding: .utf8)
        // ezstream refuses a configuration others can read (it holds the password).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: config.path)
        let source = Process()
        source.executableURL = URL(fileURLWithPath: Self.ezstream)
        source.arguments = ["-c", config.path]
        source.standardOutput = FileHandle.nullDevice
        source.standardError = FileHandle.nullDevice
        var children: [Process] = []
        defer {
            for child in children { ChildProcesses.terminate(child) }
            ChildProcesses.terminate(source)
            server.stop()
            try? FileManager.default.removeItem(at: work)
        }
        try ChildProcesses.run(source)
        try await waitFor("ezstream's mount to go live", seconds: 60) { await server.mountIsLive() }
        let recordings = work.appendingPathComponent("rec")
        let record = try ChildProcesses.startAirtap(["record", server.streamURL, "--retries", "0", "--out", recordings.path],
                                                    in: work, name: "record")
        children.append(record)
        // play into a WAV file at the same time.
        let wav = work.appendingPathComponent("play.wav").path
        let play = try ChildProcesses.startAirtap(["play", server.streamURL, "--device", "file:'\(wav)',wav", "--buffer", "0.5s",
                                                  "--retries", "0"], in: work, name: "play")
        children.append(play)
        let serve = try AirtapChild(["serve", server.streamURL, "--listen", "127.0.0.1:0"])
        let servePort = try await serve.listeningPort()
        // serve: a listener joining during a later link (asking for ICY metadata) gets that link's
        // header pages first, then only whole, CRC-valid pages, and no metaint.
        // The third link or the one after it: a poll a starved task pool holds back can miss the
        // third's 3 s altogether.
        try await waitFor("serve to relay the third link", seconds: 60, every: .milliseconds(100)) {
            let status = try await StationClient.fetch(port: servePort, path: "/status-json.xsl", headers: [], timeout: .seconds(30))
            let text = String(decoding: status.body, as: UTF8.self)
            return text.contains("Gamma") || text.contains("Delta")
        }
        let listener = try await RelayTestListener.connect(port: servePort, metadata: true)
        try await waitFor("20 kB relayed to the late listener", diagnosis: { listener.diagnosis }) { listener.bodyCount > 20_000 }
        let received = listener.received
        await listener.close()
        #expect(received.head.map { !$0.lowercased().contains("icy-metaint") } == true, "\(received.head ?? "")")
        var framer = OggFramer()
        var pages: [OggPage.Flags] = []
        var skipped = 0
        framer.push(received.body) { event in
            switch event {
            case .page(let page, _): pages.append(page.flags)
            case .skipped(_, let count): skipped += count
            }
        }
        #expect(pages.first?.contains(.beginningOfStream) == true, "the first page is the link's BOS")
        #expect(skipped == 0, "only whole pages")
        #expect(try await serve.terminate() == 0)

        #expect(await ChildProcesses.waitForExit(record, timeout: .seconds(120)), "record ends when the playlist has played")
        let stderr = (try? String(contentsOf: work.appendingPathComponent("record.err"), encoding: .utf8)) ?? ""
        #expect(record.terminationStatus == 0, "\(stderr)")

        #expect(await ChildProcesses.waitForExit(play, timeout: .seconds(60)), "play ends with the stream")
        let playErrors = (try? String(contentsOf: work.appendingPathComponent("play.err"), encoding: .utf8)) ?? ""
        #expect(play.terminationStatus == 0, "\(playErrors)")
        for title in ["Gamma", "Delta"] { #expect(playErrors.contains("title: Ezstream - \(title)"), "\(playErrors)") }
        let heard = try WAVAudio(path: wav)
        #expect(heard.frameCount > heard.sampleRate, "play wrote audio: \(heard.frameCount) frames at \(heard.sampleRate) Hz")

        let files = filesBelow(recordings).filter { $0.hasSuffix(".ogg") || $0.hasSuffix(".opus") }
        let complete = files.filter { !$0.contains("incomplete/") }.map { ($0 as NSString).lastPathComponent }.sorted()
        // The first link was under way when airtap joined: incomplete. The others are whole, each named from its comments.
        #expect(complete == ["Ezstream - Beta – Zwei.opus", "Ezstream - Delta.opus", "Ezstream - Gamma.ogg"], "\(files)\n\(stderr)")
        for name in complete {
            let path = filesBelow(recordings).first { $0.hasSuffix(name) }.map { recordings.appendingPathComponent($0).path } ?? ""
            let found = try await OggStationTests.inspect(path)
            #expect(found.decodesCleanly, "\(name)")
            let sent = Double(Self.files.first { name.contains($0.title) }?.seconds ?? 0)
            #expect(abs(found.seconds - sent) < 0.1, "\(name): \(found.seconds) s, \(sent) s sent")
        }
    }
}

/// airtap's `/status-json.xsl` beside a real Icecast2's for the same Ogg mounts.
@Suite("Icecast status shape for Ogg, against icecast2")
struct OggIcecastStatusTests {
    /// What a JSON value is, as a monitoring script reading it sees it.
    static func kind(_ value: Any) -> String {
        switch value {
        case is NSNull: "null"
        case is String: "string"
        case is Bool: "bool"
        case is NSNumber, is Int, is Double: "number"
        default: "\(type(of: value))"
        }
    }

    /// The sources of a `/status-json.xsl` answer, by listen URL path.
    static func sources(port: Int) async throws -> [String: [String: Any]] {
        let answer = try await StationClient.fetch(port: port, path: "/status-json.xsl", headers: [], timeout: .seconds(10))
        guard let document = try? JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any] else {
            throw IcecastServer.Failure("not JSON from port \(port): \(answer.statusLine) \(String(decoding: answer.body, as: UTF8.self))")
        }
        let stats = document["icestats"] as? [String: Any]
        let list = (stats?["source"] as? [[String: Any]]) ?? (stats?["source"] as? [String: Any]).map { [$0] } ?? []
        var byPath: [String: [String: Any]] = [:]
        for source in list {
            guard let url = (source["listenurl"] as? String).flatMap(URLComponents.init(string:)) else { continue }
            byPath[url.path] = source
        }
        return byPath
    }

    static func startEzstream(_ server: IcecastServer, mount: String, file: URL, in work: URL) throws -> Process {
        let name = String(mount.dropFirst())
        let playlist = work.appendingPathComponent("\(name).txt")
        try file.path.write(to: playlist, atomically: true, encoding: .utf8)
        let config = work.appendingPathComponent("ezstream-\(name).xml")
        try """
            <ezstream>
              <servers><server><hostname>127.0.0.1</hostname><port>\(server.port)</port>
                <password>\(IcecastServer.sourcePassword)</password></server></servers>
              <streams><stream><mountpoint>\(mount)</mountpoint><format>Ogg</format></stream></streams>
              <intakes><intake><type>playlist</type><filename>\(playlist.path)</filename></intake></intakes>
            </ezstream>
            """.write(to: config, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: config.path)
        let source = Process()
        source.executableURL = URL(fileURLWithPath: OggIcecastTests.ezstream)
        source.arguments = ["-c", config.path]
        source.standardOutput = FileHandle.nullDevice
        source.standardError = FileHandle.nullDevice
        try ChildProcesses.run(source)
        return source
    }

    @Test("serve's /status-json.xsl for a Vorbis and an Opus mount has icecast2's fields and types: server_type application/ogg, subtype, audio_*, ice-bitrate, artist apart from title",
          .enabled(if: OggIcecastTests.isAvailable, "icecast2, ffmpeg or ezstream is not installed (tools/install-deps installs them)"),
          .waitingForChildren)
    func statusMatchesIcecast() async throws {
        let work = try AirtapBinary.temporaryFolder()
        // Long enough that neither link ends while the test compares.
        let vorbis = ("vorbis.ogg", "libvorbis", "Alpha - Ω", 440)
        let opus = ("opus.opus", "libopus", "Beta", 660)
        for file in [vorbis, opus] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            process.arguments = ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=\(file.3):duration=120",
                                 "-ac", "2", "-c:a", file.1, "-metadata", "title=\(file.2)", "-metadata", "artist=Ezstream",
                                 "-y", work.appendingPathComponent(file.0).path]
            try ChildProcesses.spawn(process)
            // Awaited, not waited for: a pool thread blocked on a child stalls the other tests.
            try #require(await ChildProcesses.waitForExit(process, timeout: .seconds(600)))
            try #require(process.terminationStatus == 0, "ffmpeg could not make \(file.0)")
        }
        let server = try await IcecastServer.start()
        var children: [Process] = []
        defer {
            for child in children { ChildProcesses.terminate(child) }
            server.stop()
            try? FileManager.default.removeItem(at: work)
        }
        children.append(try Self.startEzstream(server, mount: "/vorbis", file: work.appendingPathComponent(vorbis.0), in: work))
        children.append(try Self.startEzstream(server, mount: "/opus", file: work.appendingPathComponent(opus.0), in: work))
        try await waitFor("both mounts live at icecast2", seconds: 30, every: .milliseconds(100)) {
            // Until its first source's stats are in, icecast2 2.4.4 writes broken JSON (`"icestats":"server_start"...`).
            let sources = (try? await Self.sources(port: server.port)) ?? [:]
            return sources["/vorbis"]?["title"] != nil && sources["/opus"]?["subtype"] != nil
        }
        let stations = work.appendingPathComponent("stations.json")
        try """
            {"stations": [{"id": "vorbis", "name": "Vorbis Here", "url": "http://127.0.0.1:\(server.port)/vorbis"},
                          {"id": "opus", "name": "Opus Here", "url": "http://127.0.0.1:\(server.port)/opus"}]}
            """.write(to: stations, atomically: true, encoding: .utf8)
        let serve = try AirtapChild(["serve", "vorbis", "opus", "--listen", "127.0.0.1:0", "--stations", stations.path])
        defer { if serve.process.isRunning { serve.process.terminate() } }
        let port = try await serve.listeningPort()
        try await waitFor("both mounts with a title at serve", seconds: 30, every: .milliseconds(100)) {
            let sources = try await Self.sources(port: port)
            return sources["/vorbis"]?["title"] != nil && sources["/opus"]?["title"] != nil
        }
        let icecast = try await Self.sources(port: server.port)
        let airtap = try await Self.sources(port: port)
        // airtap's own field, and the ones Icecast shows when the source sends them.
        let airtapOnly: Set<String> = ["airtap_upstream", "server_url"]
        for mount in ["/vorbis", "/opus"] {
            let theirs = try #require(icecast[mount], "\(icecast.keys)")
            let ours = try #require(airtap[mount], "\(airtap.keys)")
            let missing = Set(theirs.keys).subtracting(ours.keys)
            #expect(missing.isEmpty, "\(mount): icecast2 has \(missing.sorted()) that serve has not")
            for key in Set(theirs.keys).intersection(ours.keys) {
                #expect(Self.kind(theirs[key]!) == Self.kind(ours[key]!), "\(mount) \(key): \(theirs[key]!) vs \(ours[key]!)")
            }
            for key in ["server_type", "subtype", "audio_channels", "audio_samplerate", "audio_bitrate", "ice-bitrate", "artist", "title"] {
                guard let expected = theirs[key] else { continue }
                #expect("\(expected)" == "\(ours[key] ?? "none")", "\(mount) \(key)")
            }
        }
        // Vorbis: icecast2 reads every field it shows from the link's headers; serve shows the same set.
        let extra = Set(airtap["/vorbis"]!.keys).subtracting(icecast["/vorbis"]!.keys).subtracting(airtapOnly)
        #expect(extra.isEmpty, "serve has \(extra.sorted()) that icecast2 has not")
        #expect(airtap["/vorbis"]?["server_type"] as? String == "application/ogg")
        #expect(airtap["/vorbis"]?["artist"] as? String == "Ezstream" && airtap["/vorbis"]?["title"] as? String == "Alpha - Ω")
        // The names are the stations', not the upstream's one icy-name for both.
        #expect(airtap["/vorbis"]?["server_name"] as? String == "Vorbis Here")
        #expect(airtap["/opus"]?["server_name"] as? String == "Opus Here")
        #expect(try await serve.terminate() == 0)
    }
}
