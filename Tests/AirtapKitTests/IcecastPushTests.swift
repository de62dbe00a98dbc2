import AirtapIngest
import AirtapKit
@testable import AirtapRelay
import AirtapSupport
import AirtapTestSupport
import Foundation
import ICYWire
import ShoutSource
@testable import TestStation
import Testing

extension IcecastPushMachine.FailureAction {
    /// The delay of a retry; nil for a stop.
    var delay: Double? { if case .retry(let retry) = self { retry.delay } else { nil } }
}

extension IcecastPushMachine {
    /// A push whose stream is known to be MP3.
    static func mp3(target: String, policy: ReconnectPolicy) -> Self {
        var machine = Self(target: target, policy: policy)
        machine.formatKnown(.mp3)
        return machine
    }

    static func ogg(policy: ReconnectPolicy = ReconnectPolicy(jitter: 0)) -> Self {
        var machine = Self(target: "t", policy: policy)
        machine.formatKnown(.ogg)
        return machine
    }

    /// The next MP3 frame's action.
    mutating func frame(now: Double) -> PacketAction {
        packet(.frame, bytes: [0xFF, 0xFB], now: now)
    }
}

@Suite("relay --to icecast:// (airtap as a source client)")
struct IcecastPushTests {
    /// Waits until the relay holds the mount; records an issue (with the relay's log) and returns
    /// false when it ends first or 120 s pass (the time only bounds a hang).
    static func mountComesUp(_ icecast: IcecastServer, source: Process, log: URL) async throws -> Bool {
        var patience = Patience(seconds: 120)
        while await !icecast.mountIsLive() {
            guard source.isRunning, !patience.isSpent() else {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                Issue.record("the mount never came up: \(text) \(icecast.errorLog)")
                return false
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    /// A listener of the mount, from before `station` (paused until then) goes on, until the
    /// relay's stream ends and Icecast closes the mount.
    static func listenToTheEnd(_ icecast: IcecastServer, resuming station: TestStationServer,
                               headers: [(String, String)] = []) async throws -> StationClient.Response {
        let port = icecast.port
        let listener = Task {
            try await StationClient.fetch(port: port, path: IcecastServer.mount, headers: headers, timeout: .seconds(120))
        }
        try await waitFor("the listener on the mount", diagnosis: { icecast.errorLog.suffix(2000).description }) {
            await icecast.listenerCount() >= 1
        }
        station.resumeStall()
        return try await listener.value
    }

    @Test("Source URLs: icecast with a mount and a default user, shoutcast without one; a password in the URL is refused",
          arguments: [
              ("icecast://source@127.0.0.1:8000/live", "icecast://source@127.0.0.1:8000/live"),
              ("icecast://127.0.0.1/radio.mp3", "icecast://source@127.0.0.1:8000/radio.mp3"),
              ("ICECAST://dj@localhost:8010/a", "icecast://dj@localhost:8010/a"),
              ("shoutcast://127.0.0.1:8002", "shoutcast://127.0.0.1:8002"),
              ("icecast://source:hunter2@127.0.0.1:8000/live", "error"),
              // A colon percent-encoded (once, twice, either case) is a password all the same.
              ("icecast://source%3Ahunter2@127.0.0.1:8000/live", "error"),
              ("icecast://source%3ahunter2@127.0.0.1:8000/live", "error"),
              ("icecast://source%253Ahunter2@127.0.0.1:8000/live", "error"),
              ("shoutcast://x%3Ahunter2@127.0.0.1:8002", "error"),
              ("icecast://dj%20one@127.0.0.1:8000/live", "icecast://dj%20one@127.0.0.1:8000/live"),
              ("icecast://dj%FF@127.0.0.1:8000/live", "error"),
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

    @Test("No error about a source URL shows its password, whatever else is wrong with the URL", arguments: [
        "icecast://source:hunter2@127.0.0.1:8000/live mount",
        "icecast://source:hunter2@127.0.0.1:80a/live",
        "icecast://source:hunter2@127.0.0.1:-5/live",
        "icecast://source:hunter2@[::1/live",
        "icecast://source:hunter2@/live",
        "icecast://source:hun/ter2@127.0.0.1/live",
        "icecast://source:hun@ter2@127.0.0.1/live",
        "icecast://source:hunter2@127.0.0.1:99999/live",
        "icecast://source%3Ahunter2@127.0.0.1:99999/live",
        "icecast://source%3Ahunter2@127.0.0.1:8000",
        "icecast://source%3Ahunter2@127.0.0.1:8000/live?x=1",
        "shoutcast://source%3Ahunter2@127.0.0.1:8000/mount",
        "https://source:hunter2@127.0.0.1:8000/live",
    ])
    func errorsHideThePassword(text: String) {
        do throws(AirtapError) {
            let target = try IcecastTarget.parse(text)
            Issue.record("\(text) was taken: \(target?.description ?? "as a file name")")
        } catch {
            #expect(error.exitCode == 1, "\(error)")
            for piece in ["hunter2", "hunter", "hun", "ter2"] {
                #expect(!error.description.contains(piece), "the error shows the password: \(error)")
            }
        }
    }

    @Test("--retries 0: the first failure ends the push; --retries N: it waits, drops, connects again, and gives up after N")
    func machineRules() {
        var random = SystemRandomNumberGenerator()
        let refused = ShoutConnection.ShoutError(kind: .cannotConnect, detail: "Couldn't connect")
        var once = IcecastPushMachine.mp3(target: "icecast://source@h:1/m", policy: ReconnectPolicy(maxRetries: 0))
        #expect(once.frame(now: 0) == .connect(.mp3))
        _ = once.connected(now: 0)
        guard case .stop(let error) = once.failed(refused, now: 3, random: &random) else {
            Issue.record("no retries, yet it did not stop")
            return
        }
        #expect(error.exitCode == 2 && error.description.contains("cannot connect"))
        #expect(once.frame(now: 4) == .drop)

        var retrying = IcecastPushMachine.mp3(target: "t", policy: ReconnectPolicy(initialDelay: 1, maxRetries: 2, jitter: 0))
        #expect(retrying.frame(now: 0) == .connect(.mp3))
        _ = retrying.connected(now: 0)
        #expect(retrying.frame(now: 5) == .send)
        #expect(retrying.failed(.init(kind: .disconnected, detail: "gone"), now: 5, random: &random).delay == 1)
        #expect(retrying.frame(now: 5.5) == .drop)
        #expect(retrying.frame(now: 6) == .connect(.mp3))
        #expect(retrying.failed(refused, now: 6, random: &random).delay == 2)
        #expect(retrying.frame(now: 8) == .connect(.mp3))
        if case .stop = retrying.failed(refused, now: 8, random: &random) {} else { Issue.record("the third failure did not give up") }
    }

    @Test("Under the policy a push gets without --retries: any number of drops once the mount was ours, each after a delay that backs off with jitter; not a first login that fails")
    func foreverByDefault() throws {
        // What `relay --to icecast://` passes without --retries (AirtapCLITests checks that it does).
        let policy = ReconnectPolicy(retriesBeforeFirstAudio: false)
        var random = SystemRandomNumberGenerator()
        var machine = IcecastPushMachine.mp3(target: "icecast://source@127.0.0.1:8000/live", policy: policy)
        var delays: [Double] = []
        var now = 0.0
        _ = machine.connected(now: now)
        for attempt in 1...100 {
            now += 1
            let kind: ShoutConnection.ShoutError.Kind = attempt.isMultiple(of: 2) ? .disconnected : .cannotConnect
            let action = machine.failed(.init(kind: kind, detail: "Socket error"), now: now, random: &random)
            guard case .retry(let retry) = action else {
                Issue.record("attempt \(attempt) gave up: \(action)")
                return
            }
            #expect(retry.attempt == attempt)
            delays.append(retry.delay)
            now += retry.delay
            #expect(machine.frame(now: now) == .connect(.mp3))
        }
        #expect(delays[0] < 2 && delays[3] > delays[0] * 4 && delays.allSatisfy { $0 <= policy.maxDelay }, "\(delays)")
        #expect(Set(delays.suffix(20)).count > 1, "no jitter: \(delays.suffix(20))")

        var first = IcecastPushMachine.mp3(target: "icecast://source@127.0.0.1:8000/live", policy: policy)
        #expect(first.frame(now: 0) == .connect(.mp3))
        if case .retry = first.failed(.init(kind: .loginRefused, detail: "wrong"), now: 0, random: &random) {
            Issue.record("a first login that fails is retried")
        }
    }

    @Test("Once the mount was ours, a refused login (Icecast still holding the dropped source) is retried like a drop")
    func refusedAfterStreaming() {
        var random = SystemRandomNumberGenerator()
        var machine = IcecastPushMachine.mp3(target: "t", policy: ReconnectPolicy(jitter: 0, retriesBeforeFirstAudio: false))
        _ = machine.connected(now: 0)
        for attempt in 1...10 {
            let action = machine.failed(.init(kind: .loginRefused, detail: "in use"), now: Double(attempt), random: &random)
            #expect(action.delay != nil, "attempt \(attempt): \(action)")
        }
    }

    @Test("--retries N: a server that cannot be reached at the start (still starting) is tried again; a first refused login ends the push at once")
    func firstFailureWithRetries() {
        var random = SystemRandomNumberGenerator()
        // What `relay --to icecast://` passes with --retries 20 (AirtapCLITests checks that it does).
        let policy = ReconnectPolicy(maxRetries: 20, jitter: 0, retriesBeforeFirstAudio: true)
        var machine = IcecastPushMachine.mp3(target: "t", policy: policy)
        #expect(machine.frame(now: 0) == .connect(.mp3))
        let action = machine.failed(.init(kind: .cannotConnect, detail: "Couldn't connect"), now: 0, random: &random)
        #expect(action.delay == 1, "\(action)")
        #expect(machine.frame(now: 1) == .connect(.mp3))
        _ = machine.connected(now: 1)
        #expect(machine.state == .streaming(since: 1, awaitsPacketStart: false))

        for kind in [ShoutConnection.ShoutError.Kind.loginRefused, .configuration] {
            var refused = IcecastPushMachine.mp3(target: "t", policy: policy)
            #expect(refused.frame(now: 0) == .connect(.mp3))
            guard case .stop(let error) = refused.failed(.init(kind: kind, detail: "wrong"), now: 0, random: &random) else {
                Issue.record("a first \(kind) is retried")
                continue
            }
            #expect(error.exitCode == 2, "\(error)")
            #expect(refused.state == .stopped)
        }
    }

    @Test("A refused login after the mount was lost is retried while Icecast may still hold it, and ends the push after that")
    func refusedLoginGrace() {
        var random = SystemRandomNumberGenerator()
        let refused = ShoutConnection.ShoutError(kind: .loginRefused, detail: "in use")
        let grace = IcecastPushMachine.mountReleaseGrace
        #expect(grace >= 30 && grace <= 120, "\(grace)")
        var machine = IcecastPushMachine.mp3(target: "t", policy: ReconnectPolicy(jitter: 0))
        _ = machine.connected(now: 0)
        // Lost at 100 s: refusals up to the grace later are the server still holding the mount.
        #expect(machine.failed(.init(kind: .disconnected, detail: "gone"), now: 100, random: &random).delay != nil)
        #expect(machine.failed(refused, now: 101, random: &random).delay != nil)
        #expect(machine.failed(refused, now: 100 + grace, random: &random).delay != nil)
        guard case .stop(let error) = machine.failed(refused, now: 100 + grace + 1, random: &random) else {
            Issue.record("a login refused long after the mount was lost is retried")
            return
        }
        #expect(error.exitCode == 2 && error.description.contains("refused the source login"), "\(error)")
        #expect(machine.state == .stopped)

        // The window starts again each time the mount is lost, not at the first loss.
        var again = IcecastPushMachine.mp3(target: "t", policy: ReconnectPolicy(jitter: 0))
        _ = again.connected(now: 0)
        #expect(again.failed(.init(kind: .disconnected, detail: "gone"), now: 10, random: &random).delay != nil)
        _ = again.connected(now: 20)
        #expect(again.failed(.init(kind: .disconnected, detail: "gone"), now: 1000, random: &random).delay != nil)
        #expect(again.failed(refused, now: 1000 + grace / 2, random: &random).delay != nil)
    }

    @Test("The retry line names the server once, says why and when it tries again")
    func retryLine() {
        var random = SystemRandomNumberGenerator()
        let target = "icecast://source@127.0.0.1:8000/live"
        var machine = IcecastPushMachine.mp3(target: target, policy: ReconnectPolicy(jitter: 0))
        _ = machine.connected(now: 0)
        guard case .retry(let retry) = machine.failed(.init(kind: .disconnected, detail: "Socket error"), now: 5, random: &random) else {
            Issue.record("no retry")
            return
        }
        #expect(retry.message == "\(target): the server closed the source connection (Socket error); trying again in 1.0 s (attempt 1)")
    }

    @Test("Ogg: every (re)connection starts with the current link's header pages; audio resumes at a page that starts a packet")
    func oggResume() {
        var random = SystemRandomNumberGenerator()
        var machine = IcecastPushMachine.ogg()
        // The first header page brings the connection up; it is among the headers, not sent twice.
        #expect(machine.packet(.oggHeader(startsLink: true), bytes: [1], now: 0) == .connect(.ogg))
        #expect(machine.connected(now: 0) == .init(title: nil, linkHeaders: [[1]], sendsPacket: false))
        #expect(machine.packet(.oggHeader(startsLink: false), bytes: [2], now: 0) == .send)
        // Right after the headers audio starts a packet, as the codecs require.
        #expect(machine.packet(.oggAudio(continuesPacket: false), bytes: [3], now: 0) == .send)
        #expect(machine.packet(.oggAudio(continuesPacket: true), bytes: [4], now: 0) == .send)
        #expect(machine.linkHeaders.pages == [[1], [2]])

        // Lost mid-link: the packet that reconnects continues a packet, so it waits; the headers go first.
        _ = machine.failed(.init(kind: .disconnected, detail: "gone"), now: 10, random: &random)
        #expect(machine.packet(.oggAudio(continuesPacket: true), bytes: [5], now: 10.5) == .drop)
        #expect(machine.packet(.oggAudio(continuesPacket: true), bytes: [6], now: 11) == .connect(.ogg))
        #expect(machine.connected(now: 11) == .init(title: nil, linkHeaders: [[1], [2]], sendsPacket: false))
        #expect(machine.state == .streaming(since: 11, awaitsPacketStart: true))
        #expect(machine.packet(.oggAudio(continuesPacket: true), bytes: [7], now: 11) == .drop)
        #expect(machine.packet(.oggAudio(continuesPacket: false), bytes: [8], now: 11) == .send)
        #expect(machine.state == .streaming(since: 11, awaitsPacketStart: false))
        #expect(machine.packet(.oggAudio(continuesPacket: true), bytes: [9], now: 11) == .send)
        // Dropped: the one while waiting to retry, the connecting one and the next that continued a packet.
        #expect(machine.dropped == 3)

        // A new link replaces the kept headers; a reconnection on an audio page that starts a
        // packet sends it right after them.
        #expect(machine.packet(.oggHeader(startsLink: true), bytes: [10], now: 12) == .send)
        #expect(machine.packet(.oggHeader(startsLink: false), bytes: [11], now: 12) == .send)
        #expect(machine.linkHeaders.pages == [[10], [11]])
        let retryAt = 20 + (machine.failed(.init(kind: .disconnected, detail: "gone"), now: 20, random: &random).delay ?? 0)
        #expect(machine.packet(.oggAudio(continuesPacket: false), bytes: [12], now: retryAt) == .connect(.ogg))
        #expect(machine.connected(now: retryAt) == .init(title: nil, linkHeaders: [[10], [11]], sendsPacket: true))
        #expect(machine.state == .streaming(since: retryAt, awaitsPacketStart: false))
    }

    @Test("Ogg: the kept header pages of a link stay within their bound")
    func oggHeaderBound() {
        var machine = IcecastPushMachine.ogg()
        let page = [UInt8](repeating: 7, count: OggLinkHeaders.maxBytes / 2)
        _ = machine.packet(.oggHeader(startsLink: true), bytes: page[...], now: 0)
        _ = machine.packet(.oggHeader(startsLink: false), bytes: page[...], now: 0)
        _ = machine.packet(.oggHeader(startsLink: false), bytes: [1], now: 0)
        #expect(machine.linkHeaders.pages.count == 2)
        #expect(machine.linkHeaders.byteCount == OggLinkHeaders.maxBytes)
    }

    @Test("MP3: the title in effect is sent while streaming, kept while not, and starts every reconnection; the frame that connects goes out")
    func mp3Title() {
        var random = SystemRandomNumberGenerator()
        var machine = IcecastPushMachine.mp3(target: "t", policy: ReconnectPolicy(jitter: 0))
        #expect(machine.titleChanged("One") == .keep)
        #expect(machine.frame(now: 0) == .connect(.mp3))
        #expect(machine.connected(now: 0) == .init(title: "One", linkHeaders: [], sendsPacket: true))
        #expect(machine.titleChanged("Two") == .send("Two"))
        let retryAt = 5 + (machine.failed(.init(kind: .disconnected, detail: "gone"), now: 5, random: &random).delay ?? 0)
        #expect(machine.titleChanged("Three") == .keep)
        #expect(machine.frame(now: retryAt) == .connect(.mp3))
        #expect(machine.connected(now: retryAt) == .init(title: "Three", linkHeaders: [], sendsPacket: true))

        // Ogg carries its titles in its links: never sent as metadata updates.
        var ogg = IcecastPushMachine.ogg()
        _ = ogg.packet(.oggHeader(startsLink: true), bytes: [1], now: 0)
        _ = ogg.connected(now: 0)
        #expect(ogg.titleChanged("One") == .keep)
    }

    @Test("Drops: before the format is known, a failed connection's packet, everything once stopped")
    func drops() {
        var random = SystemRandomNumberGenerator()
        var machine = IcecastPushMachine(target: "t", policy: ReconnectPolicy(initialDelay: 1, jitter: 0, retriesBeforeFirstAudio: true))
        #expect(machine.frame(now: 0) == .drop)
        #expect(machine.state == .waitingForAudio)
        machine.formatKnown(.mp3)
        #expect(machine.frame(now: 0) == .connect(.mp3))
        #expect(machine.failed(.init(kind: .cannotConnect, detail: "no"), now: 0, random: &random).delay == 1)
        #expect(machine.dropped == 2)
        #expect(machine.frame(now: 1) == .connect(.mp3))
        _ = machine.connected(now: 1)
        #expect(machine.frame(now: 2) == .send)
        machine.stop()
        #expect(machine.frame(now: 3) == .drop)
        #expect(machine.titleChanged("late") == .keep)
        #expect(machine.connected(now: 4) == .init(title: nil, linkHeaders: [], sendsPacket: false))
        #expect(machine.state == .stopped && machine.dropped == 3)
    }

    @Test("A password file others can read is used with a one-line warning naming it and its mode; one only its owner reads, none")
    func passwordFileMode() throws {
        let work = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("icecast-password")
        try "hunter2\nsecond line\n".write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        let open = try IcecastTarget.password(file: file.path, environment: [:])
        #expect(open.value == "hunter2")
        let warning = try #require(open.warning, "no warning for mode 0644")
        #expect(warning.contains(file.path) && warning.contains("0644") && !warning.contains("\n") && !warning.contains("hunter2"), "\(warning)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        #expect(try IcecastTarget.password(file: file.path, environment: [:]).warning == nil)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: file.path)
        #expect(try IcecastTarget.password(file: file.path, environment: [:]).warning == nil)
        // A file far longer than a password line is refused before it is read whole.
        try Data(repeating: 0x41, count: 1 << 20).write(to: file)
        #expect(throws: AirtapError.self) { try IcecastTarget.password(file: file.path, environment: [:]) }
    }

    @Test("relay warns, in one line on stderr, of a password file every user can read",
          .waitingForChildren)
    func passwordFileModeWarning() async throws {
        let work = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let file = work.appendingPathComponent("icecast-password")
        try "hunter2\n".write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o604], ofItemAtPath: file.path)
        let port = try IcecastServer.freeLoopbackPort()  // nothing listens there: the station fails at once
        let result = try await AirtapBinary.run(["relay", "http://127.0.0.1:\(port)/", "--to", "icecast://127.0.0.1:\(port)/live",
                                                 "--password-file", file.path])
        #expect(result.status == 2, "\(result.stderr)")
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("readable by every user") }
        #expect(warnings.count == 1 && warnings.first?.contains("0604") == true && warnings.first?.contains(file.path) == true,
                "\(result.stderr)")
        #expect(!result.stderr.contains("hunter2"))
    }

    @Test("A listener of the Icecast mount gets the station's frames (no ICY bytes, no garbage) and its titles; the password shows nowhere",
          .enabled(if: IcecastServer.isAvailable, "icecast2 is not installed (tools/install-deps installs it)"),
          .waitingForChildren)
    func pushToRealIcecast() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        // The station pauses 1 s in until a listener is on the mount, so the listener hears the
        // titles after it however late a starved task pool sees the mount come up and joins.
        var configuration = StationConfiguration(metaint: 8000, trackSeconds: 2.5, pace: .realtime, maxSeconds: 11)
        configuration.stall = .untilResumed(afterSeconds: 1)
        try await withStation(configuration) { station in
            let work = try AirtapBinary.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: work) }
            let passwordFile = work.appendingPathComponent("password")
            try "\(IcecastServer.sourcePassword)\n".write(to: passwordFile, atomically: true, encoding: .utf8)
            let target = "icecast://source@127.0.0.1:\(icecast.port)\(IcecastServer.mount)"
            // --retries 0: the push ends with the station's stream (a push reconnects forever by default).
            // The pause is the test's, not a stall under test: the stall timeout leaves room for it.
            let relay = try ChildProcesses.startAirtap(["relay", station.streamURL, "--to", target, "--password-file", passwordFile.path,
                                                        "--log-level", "info", "--retries", "0", "--stall-timeout", "10m"],
                                                       in: work, name: "relay")
            defer { ChildProcesses.terminate(relay) }
            guard try await Self.mountComesUp(icecast, source: relay, log: work.appendingPathComponent("relay.err")) else { return }
            let heard = try await Self.listenToTheEnd(icecast, resuming: station, headers: [("Icy-MetaData", "1")])
            let ended = await ChildProcesses.waitForExit(relay, timeout: .seconds(120))
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
          .waitingForChildren)
    func refusedLogins() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        try await withStation(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime)) { station in
            let work = try AirtapBinary.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: work) }
            let target = "icecast://source@127.0.0.1:\(icecast.port)\(IcecastServer.mount)"
            // --for only bounds a relay wrongly let in: the refusal ends the run, however slowly a
            // loaded machine gets there.
            let wrong = try await AirtapBinary.run(["relay", station.streamURL, "--to", target, "--for", "120s"],
                                             environment: ["AIRTAP_ICECAST_PASSWORD": "not-the-password"])
            #expect(wrong.status == 2, "\(wrong.stderr)")
            #expect(wrong.stderr.split(separator: "\n").count == 1 && wrong.stderr.contains("refused the source login"), "\(wrong.stderr)")
            #expect(!wrong.stderr.contains("not-the-password"))

            // One relay holds the mount; a second one is refused.
            let passwordFile = work.appendingPathComponent("password")
            try IcecastServer.sourcePassword.write(to: passwordFile, atomically: true, encoding: .utf8)
            let first = try ChildProcesses.startAirtap(["relay", station.streamURL, "--to", target, "--for", "600s",
                                                        "--password-file", passwordFile.path], in: work, name: "first")
            defer { ChildProcesses.terminate(first) }
            guard try await Self.mountComesUp(icecast, source: first, log: work.appendingPathComponent("first.err")) else { return }
            let second = try await AirtapBinary.run(["relay", station.streamURL, "--to", target, "--for", "120s"],
                                              environment: ["AIRTAP_ICECAST_PASSWORD": IcecastServer.sourcePassword])
            #expect(second.status == 2, "\(second.stderr)")
            #expect(second.stderr.split(separator: "\n").count == 1 && second.stderr.contains("refused the source login"), "\(second.stderr)")
        }
    }

    @Test("Ogg Vorbis through the push: a listener of the mount gets pages ffmpeg decodes without an error, and every link's title",
          .enabled(if: IcecastServer.isAvailable, "icecast2 or ffmpeg is not installed (tools/install-deps installs both)"),
          .waitingForChildren)
    func oggPush() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        // The station pauses 1 s in until a listener is on the mount, so the listener hears the
        // links after it however late a starved task pool sees the mount come up and joins (the
        // 9 s stream could otherwise end first). Not longer, nor more links: from a longer chain
        // ffmpeg 5.1 can fail to read a later link ("failed to create or replace stream").
        var configuration = StationConfiguration(trackSeconds: 2, pace: .realtime, maxSeconds: 9)
        configuration.stall = .untilResumed(afterSeconds: 1)
        configuration.codec = .vorbis
        let station = try await TestStationServer.start(configuration)
        defer { Task { try? await station.stop() } }
        let work = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let passwordFile = work.appendingPathComponent("password")
        try IcecastServer.sourcePassword.write(to: passwordFile, atomically: true, encoding: .utf8)
        let target = "icecast://source@127.0.0.1:\(icecast.port)\(IcecastServer.mount)"
        // The pause is the test's, not a stall under test: the stall timeout leaves room for it.
        let relay = try ChildProcesses.startAirtap(["relay", station.streamURL, "--to", target, "--password-file", passwordFile.path,
                                                    "--retries", "0", "--stall-timeout", "10m"], in: work, name: "relay")
        defer { ChildProcesses.terminate(relay) }
        guard try await Self.mountComesUp(icecast, source: relay, log: work.appendingPathComponent("relay.err")) else { return }
        let heard = try await Self.listenToTheEnd(icecast, resuming: station)
        #expect(await ChildProcesses.waitForExit(relay, timeout: .seconds(120)))
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
        try ChildProcesses.spawn(decode)
        while decode.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        let complaints = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(decode.terminationStatus == 0 && complaints.isEmpty, "ffmpeg: \(complaints)")
        // Each link the listener got carries its title in its comment header.
        let text = String(decoding: heard.body, as: UTF8.self)
        let titles = station.program.tracks.map(\.title).filter { text.contains($0) }
        #expect(titles.count >= 2, "titles found: \(titles)")
    }

    /// One push of `serverDropsTheSource`: a station, its relay process and the mount it feeds.
    struct DroppedPush {
        let mount: String
        let relay: Process
        let log: URL

        var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        /// The lines that say the push lost the server and will connect again.
        var retryLines: [Substring] { logText.split(separator: "\n").filter { $0.contains("trying again") } }

        /// Waits until the push has logged more than `count` retry lines and holds its mount
        /// again; records an issue (with the log) and returns false when the relay ends first.
        func reconnects(after count: Int, to icecast: IcecastServer) async throws -> Bool {
            var patience = Patience(seconds: 90)
            while true {
                if retryLines.count > count, await icecast.mountIsLive(mount) { return true }
                guard relay.isRunning, !patience.isSpent() else {
                    let state = relay.isRunning ? "still running"
                        : "ended by \(relay.terminationReason == .uncaughtSignal ? "signal" : "exit") \(relay.terminationStatus)"
                    Issue.record("\(mount): no reconnect (\(state)): \(logText) \(icecast.errorLog)")
                    return false
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    @Test("When Icecast drops the source (admin killsource, then a restart) the push logs why, naming the server once, reconnects, and the mount plays again: MP3 without --retries, Ogg with --retries 20",
          .enabled(if: IcecastServer.isAvailable, "icecast2 or ffmpeg is not installed (tools/install-deps installs both)"),
          .waitingForChildren)
    func serverDropsTheSource() async throws {
        let icecast = try await IcecastServer.start()
        defer { icecast.stop() }
        let mp3 = try await TestStationServer.start(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime))
        defer { Task { try? await mp3.stop() } }
        var oggConfiguration = StationConfiguration(trackSeconds: 3, pace: .realtime)
        oggConfiguration.codec = .vorbis
        let ogg = try await TestStationServer.start(oggConfiguration)
        defer { Task { try? await ogg.stop() } }
        let work = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: work) }
        let passwordFile = work.appendingPathComponent("password")
        try IcecastServer.sourcePassword.write(to: passwordFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)

        var pushes: [DroppedPush] = []
        defer { for push in pushes { ChildProcesses.terminate(push.relay) } }
        for (name, station, extra) in [("mp3", mp3, [String]()), ("ogg", ogg, ["--retries", "20"])] {
            let mount = "\(IcecastServer.mount).\(name)"
            let relay = try ChildProcesses.startAirtap(["relay", station.streamURL, "--to", "icecast://source@127.0.0.1:\(icecast.port)\(mount)",
                                                        "--password-file", passwordFile.path] + extra, in: work, name: name)
            pushes.append(DroppedPush(mount: mount, relay: relay, log: work.appendingPathComponent("\(name).err")))
        }
        for push in pushes {
            guard try await push.reconnects(after: -1, to: icecast) else { return }
        }

        for push in pushes { try await icecast.killSource(push.mount) }
        for push in pushes {
            guard try await push.reconnects(after: 0, to: icecast) else { return }
        }
        let retriesBeforeRestart = pushes.map(\.retryLines.count)
        try await icecast.restart()
        for (push, before) in zip(pushes, retriesBeforeRestart) {
            guard try await push.reconnects(after: before, to: icecast) else { return }
        }

        for push in pushes {
            let heard = try await StationClient.fetch(port: icecast.port, path: push.mount, maxBodyBytes: 16000, timeout: .seconds(40))
            #expect(heard.status == 200 && heard.body.count == 16000, "\(push.mount): \(heard.head), \(heard.body.count) bytes")
            if push.mount.hasSuffix("ogg") {
                #expect(heard.body.starts(with: Array("OggS".utf8)), "\(push.mount) does not start with an Ogg page")
            } else {
                var framer = AudioFramer()
                let frames = framer.push(heard.body).filter { if case .packet = $0 { true } else { false } }.count
                #expect(frames >= 30, "\(push.mount): only \(frames) MP3 frames in 16000 bytes")
            }
            #expect(push.relay.isRunning, "\(push.mount): the relay ended: \(push.logText)")
            let log = push.logText
            #expect(!log.contains(IcecastServer.sourcePassword), "the log shows the password: \(log)")
            for line in push.retryLines {
                #expect(line.components(separatedBy: "icecast://").count == 2, "the server's URL is not named exactly once: \(line)")
                #expect(line.contains("level=warning") || line.contains("warning"), "\(line)")
            }
        }
    }
}
