import AirtapKit
@testable import AirtapRelay
import Foundation
import ICYWire
import ShoutSource
import TestStation
import Testing

@Suite("relay --to icecast:// (airtap as a source client)")
struct IcecastPushTests {
    /// Waits until the relay holds the mount; records an issue (with the relay's log) and returns
    /// false when it ends first or 20 s pass.
    static func mountComesUp(_ icecast: IcecastServer, source: Process, log: URL) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(20)
        while await !icecast.mountIsLive() {
            guard source.isRunning, ContinuousClock.now < deadline else {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                Issue.record("the mount never came up: \(text) \(icecast.errorLog)")
                return false
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    @Test("Source URLs: icecast with a mount and a default user, shoutcast without one; a password in the URL is refused",
          arguments: [
              ("icecast://source@127.0.0.1:8000/live", "icecast://source@127.0.0.1:8000/live"),
              ("icecast://127.0.0.1/radio.mp3", "icecast://source@127.0.0.1:8000/radio.mp3"),
              ("ICECAST://dj@localhost:8010/a", "icecast://dj@localhost:8010/a"),
              ("shoutcast://127.0.0.1:8002", "shoutcast://127.0.0.1:8002"),
              ("icecast://source:hunter2@127.0.0.1:8000/live", "error"),
              ("icecast://127.0.0.1:8000", "error"),
              ("icecast://127.0.0.1:8000/", "error"),
              ("shoutcast://127.0.0.1:8000/mount", "error"),
              ("icecast://127.0.0.1:0/live", "error"),
              ("show.mp3", "not a source URL"),
              ("-", "not a source URL"),
          ])
    func targets(text: String, expected: String) {
        let result: String
        do throws(AirtapError) {
            result = try IcecastTarget.parse(text)?.description ?? "not a source URL"
        } catch {
            result = "error"
            #expect(!error.description.contains("hunter2"), "the error repeats the password: \(error)")
        }
        #expect(result == expected, "\(text)")
    }

    @Test("Without --retries the first failure ends the push; with them it waits, drops, and connects again")
    func machineRules() {
        var random = SystemRandomNumberGenerator()
        let refused = ShoutConnection.ShoutError(kind: .cannotConnect, detail: "Couldn't connect")
        var once = IcecastPushMachine(target: "icecast://source@h:1/m", policy: nil)
        #expect(once.packet(now: 0) == .connectAndSend)
        guard case .stop(let error) = once.failed(refused, now: 0, random: &random) else {
            Issue.record("no retries, yet it did not stop")
            return
        }
        #expect(error.exitCode == 2 && error.description.contains("cannot connect"))
        #expect(once.packet(now: 1) == .drop)

        var retrying = IcecastPushMachine(target: "t", policy: ReconnectPolicy(initialDelay: 1, maxRetries: 2, jitter: 0))
        #expect(retrying.packet(now: 0) == .connectAndSend)
        retrying.connected(now: 0)
        #expect(retrying.packet(now: 5) == .send)
        #expect(retrying.failed(.init(kind: .disconnected, detail: "gone"), now: 5, random: &random) == .retry(attempt: 1, after: 1))
        #expect(retrying.packet(now: 5.5) == .drop)
        #expect(retrying.packet(now: 6) == .connectAndSend)
        #expect(retrying.failed(refused, now: 6, random: &random) == .retry(attempt: 2, after: 2))
        #expect(retrying.packet(now: 8) == .connectAndSend)
        if case .stop = retrying.failed(refused, now: 8, random: &random) {} else { Issue.record("the third failure did not give up") }
    }

    @Test("A listener of the Icecast mount gets the station's frames (no ICY bytes, no garbage) and its titles; the password shows nowhere",
          .enabled(if: IcecastServer.isAvailable, "icecast2 is not installed (tools/install-deps installs it)"),
          .timeLimit(.minutes(10)))
    func pushToRealIcecast() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        let configuration = StationConfiguration(metaint: 8000, trackSeconds: 2.5, pace: .realtime, maxSeconds: 11)
        try await withStation(configuration) { station in
            let work = try AirtapBinary.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: work) }
            let passwordFile = work.appendingPathComponent("password")
            try "\(IcecastServer.sourcePassword)\n".write(to: passwordFile, atomically: true, encoding: .utf8)
            let target = "icecast://source@127.0.0.1:\(icecast.port)\(IcecastServer.mount)"
            let relay = try ChildProcesses.startAirtap(["relay", station.streamURL, "--to", target, "--password-file", passwordFile.path,
                                                        "--log-level", "info"], in: work, name: "relay")
            defer { ChildProcesses.terminate(relay) }
            guard try await Self.mountComesUp(icecast, source: relay, log: work.appendingPathComponent("relay.err")) else { return }
            // Reads until the relay's stream ends and Icecast closes the mount.
            let heard = try await StationClient.fetch(port: icecast.port, path: IcecastServer.mount,
                                                      headers: [("Icy-MetaData", "1")], timeout: .seconds(40))
            let ended = await ChildProcesses.waitForExit(relay, timeout: .seconds(20))
            let log = (try? String(contentsOf: work.appendingPathComponent("relay.err"), encoding: .utf8)) ?? ""
            try #require(ended, "relay did not end with its stream: \(log)")
            #expect(relay.terminationStatus == 0, "\(log)")
            #expect(!log.contains(IcecastServer.sourcePassword), "the log shows the password: \(log)")

            #expect(heard.status == 200, "\(heard.head)")
            #expect(heard.header("content-type") == "audio/mpeg")
            let metaint = try #require(heard.header("icy-metaint").flatMap(Int.init))
            var demuxer = ICYDemuxer(metaint: metaint)
            var audio: [UInt8] = []
            var titles: [String] = []
            for output in demuxer.consume(heard.body) {
                switch output {
                case .audio(let bytes): audio += bytes
                case .metadata(let block):
                    if let title = StreamMetadata.parse(block.bytes).streamTitle, !title.isEmpty, title != titles.last { titles.append(title) }
                }
            }
            // Whole frames back to back: Icecast's burst may start mid-frame (skipped once at the
            // start), and nothing else may stand between frames.
            var framer = AudioFramer()
            let frames = (framer.push(audio) + framer.finish()).filter { if case .packet = $0 { true } else { false } }.count
            #expect(framer.skippedByteCount < 1500, "\(framer.skippedByteCount) bytes between frames")
            #expect(frames > 38 * 5, "only \(frames) frames")
            // Every title from the listener's join on, in the station's order.
            let program = station.program.tracks.map(\.title)
            #expect(titles.count >= 3, "\(titles)")
            if let first = titles.first, let start = program.firstIndex(of: first) {
                let expected = (0..<titles.count).map { program[(start + $0) % program.count] }
                #expect(titles == expected)
            } else {
                Issue.record("the listener's first title \(titles.first ?? "none") is not the station's")
            }
        }
    }

    @Test("A wrong password and a mount in use each end with one line and exit 2",
          .enabled(if: IcecastServer.isAvailable, "icecast2 is not installed (tools/install-deps installs it)"),
          .timeLimit(.minutes(10)))
    func refusedLogins() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        try await withStation(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime)) { station in
            let work = try AirtapBinary.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: work) }
            let target = "icecast://source@127.0.0.1:\(icecast.port)\(IcecastServer.mount)"
            let wrong = try await AirtapBinary.run(["relay", station.streamURL, "--to", target, "--for", "20s"],
                                             environment: ["AIRTAP_ICECAST_PASSWORD": "not-the-password"])
            #expect(wrong.status == 2, "\(wrong.stderr)")
            #expect(wrong.stderr.split(separator: "\n").count == 1 && wrong.stderr.contains("refused the source login"), "\(wrong.stderr)")
            #expect(!wrong.stderr.contains("not-the-password"))

            // One relay holds the mount; a second one is refused.
            let passwordFile = work.appendingPathComponent("password")
            try IcecastServer.sourcePassword.write(to: passwordFile, atomically: true, encoding: .utf8)
            let first = try ChildProcesses.startAirtap(["relay", station.streamURL, "--to", target, "--for", "60s",
                                                        "--password-file", passwordFile.path], in: work, name: "first")
            defer { ChildProcesses.terminate(first) }
            guard try await Self.mountComesUp(icecast, source: first, log: work.appendingPathComponent("first.err")) else { return }
            let second = try await AirtapBinary.run(["relay", station.streamURL, "--to", target, "--for", "20s"],
                                              environment: ["AIRTAP_ICECAST_PASSWORD": IcecastServer.sourcePassword])
            #expect(second.status == 2, "\(second.stderr)")
            #expect(second.stderr.split(separator: "\n").count == 1 && second.stderr.contains("refused the source login"), "\(second.stderr)")
        }
    }

    @Test("Ogg Vorbis through the push: a listener of the mount gets pages ffmpeg decodes without an error, and every link's title",
          .enabled(if: IcecastServer.isAvailable, "icecast2 or ffmpeg is not installed (tools/install-deps installs both)"),
          .timeLimit(.minutes(10)))
    func oggPush() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        var configuration = StationConfiguration(trackSeconds: 2, pace: .realtime, maxSeconds: 9)
        configuration.codec = .vorbis
        let station = try await TestStationServer.start(configuration)
        defer { Task { try? await station.stop() } }
        let work = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let passwordFile = work.appendingPathComponent("password")
        try IcecastServer.sourcePassword.write(to: passwordFile, atomically: true, encoding: .utf8)
        let target = "icecast://source@127.0.0.1:\(icecast.port)\(IcecastServer.mount)"
        let relay = try ChildProcesses.startAirtap(["relay", station.streamURL, "--to", target, "--password-file", passwordFile.path],
                                                   in: work, name: "relay")
        defer { ChildProcesses.terminate(relay) }
        guard try await Self.mountComesUp(icecast, source: relay, log: work.appendingPathComponent("relay.err")) else { return }
        let heard = try await StationClient.fetch(port: icecast.port, path: IcecastServer.mount, timeout: .seconds(40))
        #expect(await ChildProcesses.waitForExit(relay, timeout: .seconds(20)))
        #expect(heard.status == 200, "\(heard.head)")
        #expect(heard.header("content-type") == "application/ogg" || heard.header("content-type") == "audio/ogg", "\(heard.head)")
        // No ICY bytes inside: the body is Ogg from its first byte (the link's headers come first).
        #expect(heard.body.starts(with: Array("OggS".utf8)))
        let file = work.appendingPathComponent("heard.ogg")
        try Data(heard.body).write(to: file)
        let decode = Process()
        decode.executableURL = URL(fileURLWithPath: IcecastServer.ffmpeg ?? "/usr/bin/ffmpeg")
        decode.arguments = ["-nostdin", "-v", "error", "-i", file.path, "-f", "null", "-"]
        let errors = work.appendingPathComponent("ffmpeg.err")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        decode.standardError = try FileHandle(forWritingTo: errors)
        decode.standardOutput = FileHandle.nullDevice
        try decode.run()
        while decode.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        let complaints = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(decode.terminationStatus == 0 && complaints.isEmpty, "ffmpeg: \(complaints)")
        // Each link the listener got carries its title in its comment header.
        let text = String(decoding: heard.body, as: UTF8.self)
        let titles = station.program.tracks.map(\.title).filter { text.contains($0) }
        #expect(titles.count >= 2, "titles found: \(titles)")
    }
}
