@testable import AirtapKit
@testable import AirtapPlayback
@testable import AirtapStations
import AirtapTestSupport
@testable import DesktopBus
import Foundation
@testable import ICYWire
@testable import TestStation
import Testing

/// A private session bus (`dbus-daemon --session`) for one test, stopped however the test ends.
final class PrivateSessionBus: Sendable {
    let folder: URL
    let address: String
    private let daemon = Process()

    init() async throws {
        folder = try AirtapBinary.temporaryFolder()
        let socket = folder.appendingPathComponent("bus").path
        address = "unix:path=\(socket)"
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--session", "--nofork", "--nopidfile", "--address=\(address)"]
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try ChildProcesses.run(daemon)
        // The daemon creates its socket once it listens.
        try await waitFor("the private bus's socket", seconds: 20) { FileManager.default.fileExists(atPath: socket) }
    }

    deinit { stop() }

    /// The bus goes away, as when a desktop session ends.
    func stop() { ChildProcesses.terminate(daemon) }

    /// Runs a D-Bus client (playerctl, busctl) on this bus; its stdout, trimmed. Its output goes to
    /// a file and its exit is polled: a pipe's end can leak into a child another test starts at
    /// the same moment, and a read to the end would then wait for that child, holding one of the
    /// cooperative pool's two threads.
    @discardableResult
    func client(_ tool: String, _ arguments: [String]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        process.environment = environment
        let outputPath = folder.appendingPathComponent("client-\(UUID().uuidString)").path
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.run(process)
        var patience = Patience(seconds: 60)
        while process.isRunning {
            guard !patience.isSpent() else {
                ChildProcesses.terminate(process)
                throw TimedOut(what: "\(tool) to answer")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let data = FileManager.default.contents(atPath: outputPath) ?? Data()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @discardableResult
    func playerctl(_ arguments: String...) async throws -> String {
        try await client("/usr/bin/playerctl", ["--player=airtap"] + arguments)
    }

    func busNames() async throws -> String {
        try await client("/usr/bin/busctl", ["--user", "--no-pager", "--acquired", "list"])
    }
}

@Suite("MPRIS media controls and notifications")
struct MPRISTests {
    static let titles = ["Tone A - 440", "Tone B - 554", "Tone C - 659"]

    static func station(seconds: Double, stall: StationConfiguration.Stall? = nil) async throws -> TestStationServer {
        var configuration = StationConfiguration(metaint: 2000, trackSeconds: 1.5, pace: .realtime, titles: titles,
                                                 maxSeconds: seconds)
        configuration.stall = stall
        return try await TestStationServer.start(configuration, program: PlayTests.program)
    }

    /// The WAV's frames so far (the ALSA file plugin writes as it plays); 0 before its header.
    static func framesWritten(_ wav: String) -> Int {
        let size = (try? FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int) ?? 0
        return max(0, size - 44) / 4
    }

    /// The largest sample's magnitude in frames `range` of the left channel.
    static func peak(_ audio: WAVAudio, frames range: Range<Int>) -> Int {
        range.reduce(0) { max($0, abs(Int(audio.samples[$1 * audio.channels]))) }
    }

    @Test("playerctl sees the title heard, pauses and resumes, sets the volume (0.5 is 6 dB down), and Quit exits 0")
    func controls() async throws {
        let bus = try await PrivateSessionBus()
        // Longer than the test takes however slow: each step polls playerctl on the task pool, and
        // play ends with the stream (Quit ends it first).
        let server = try await Self.station(seconds: 300)
        defer { Task { try? await server.stop() } }
        let wav = bus.folder.appendingPathComponent("out.wav").path
        // A 2 s buffer puts the ear well behind the wire: the second title arrives with 1.5 s of
        // audio received and about 1 s written (the device holds that much before it starts),
        // and is heard once 1.5 s have played, with about 2.5 s written.
        let run = try await AirtapBinary.launch(["play", server.streamURL, "--device", "file:'\(wav)',wav", "--buffer", "2s",
                                          "--retries", "0"], environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])

        try await waitFor("airtap playing on the bus") { (try? await bus.playerctl("status")) == "Playing" }
        #expect(try await bus.busNames().contains(MPRISPlayer.busName))
        // The first title names the audio at the start; the next one is heard 1.5 s in.
        // Artist and title in one read: the title moves on every 1.5 s, faster than a loaded
        // machine may run two playerctl calls.
        try await waitFor("the second title heard") {
            (try? await bus.playerctl("metadata", "--format", "{{artist}} / {{title}}")) == "Tone B / 554"
        }
        #expect(try await bus.playerctl("metadata", "xesam:url") == server.streamURL)
        // Heard, not received: the track's start (1.5 s in, less the encoder's delay) was written by then.
        #expect(Self.framesWritten(wav) >= 44100 * 14 / 10)

        try await bus.playerctl("pause")
        try await waitFor("paused") { (try? await bus.playerctl("status")) == "Paused" }
        // Paused: the output stops growing (what the device held plays out first). Stopped means
        // unchanged for a whole second: a loaded machine can hold a playing device's next period
        // back for longer than one poll.
        var settled = (frames: Self.framesWritten(wav), since: ContinuousClock.now)
        try await waitFor("no more audio written while paused") {
            let now = Self.framesWritten(wav)
            if now != settled.frames { settled = (now, .now) }
            return now > 0 && ContinuousClock.now - settled.since >= .seconds(1)
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(Self.framesWritten(wav) == settled.frames, "audio written while paused")
        try await bus.playerctl("play")
        try await waitFor("playing again") { (try? await bus.playerctl("status")) == "Playing" }

        try await bus.playerctl("volume", "0.5")
        try await waitFor("the volume read back") { (try? await bus.playerctl("volume")).flatMap(Double.init) == 0.5 }
        let fromHalf = Self.framesWritten(wav)
        // A second at half the amplitude, past what the device held at full volume.
        try await waitFor("a second at half volume") { Self.framesWritten(wav) > fromHalf + 2 * 44100 }

        try await bus.client("/usr/bin/busctl", ["--user", "call", MPRISPlayer.busName, MPRISPlayer.objectPath,
                                           MPRISPlayer.rootInterface, "Quit"])
        let result = try await run.result()
        #expect(result.status == 0, "\(result.stderr)")
        let audio = try WAVAudio(path: wav)
        let early = Self.peak(audio, frames: 4410..<44100)
        let late = Self.peak(audio, frames: (audio.frameCount - 44100)..<audio.frameCount)
        let decibels = 20 * log10(Double(late) / Double(early))
        #expect(abs(decibels + 6.02) < 0.5, "level change \(decibels) dB (peaks \(early) -> \(late))")
    }

    @Test("Stop: Stopped on the bus, the station disconnected, play goes on; Play and PlayPause connect it again; Quit exits 0")
    func stopAndPlayAgain() async throws {
        let bus = try await PrivateSessionBus()
        let server = try await Self.station(seconds: 300)
        defer { Task { try? await server.stop() } }
        let run = try await AirtapBinary.launch(["play", server.streamURL, "--device", "null", "--buffer", "0.5s", "--retries", "0"],
                                                environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        // A title heard: the connection brought audio and the player plays it.
        func titleHeard() async throws {
            try await waitFor("a title heard") { !((try? await bus.playerctl("metadata", "title")) ?? "").isEmpty }
        }
        try await titleHeard()
        try await bus.playerctl("stop")
        try await waitFor("stopped") { (try? await bus.playerctl("status")) == "Stopped" }
        try await waitFor("the station disconnected") { server.openConnections == 0 }
        #expect(run.isRunning, "\(run.stderrSoFar)")
        #expect(server.connectionsServed == 1)

        try await bus.playerctl("play")
        try await waitFor("connected again") { server.connectionsServed == 2 && server.openConnections == 1 }
        try await titleHeard()
        #expect(try await bus.playerctl("status") == "Playing")

        try await bus.playerctl("stop")
        try await waitFor("stopped again") { (try? await bus.playerctl("status")) == "Stopped" }
        try await waitFor("disconnected again") { server.openConnections == 0 }
        try await bus.playerctl("play-pause")
        try await waitFor("connected by PlayPause") { server.connectionsServed == 3 && server.openConnections == 1 }
        try await waitFor("playing after PlayPause") { (try? await bus.playerctl("status")) == "Playing" }

        try await bus.client("/usr/bin/busctl", ["--user", "call", MPRISPlayer.busName, MPRISPlayer.objectPath,
                                                 MPRISPlayer.rootInterface, "Quit"])
        let result = try await run.result()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("is disconnected until Play"), "\(result.stderr)")
    }

    /// The station on the bus, and a title of its heard: a new station has none until its
    /// first title is heard (the test stations play the same tracks).
    static func heard(_ bus: PrivateSessionBus, _ station: String) async throws {
        try await waitFor("\(station) heard") {
            let album = try? await bus.playerctl("metadata", "album")
            let title = try? await bus.playerctl("metadata", "title")
            return album == station && !(title ?? "").isEmpty
        }
    }

    /// The MP3s recorded into a station's folder below `out`, incomplete/ included.
    static func recordedMP3s(of station: String, in out: URL) -> [String] {
        FileManager.default.enumerator(atPath: out.appendingPathComponent(station).path)?
            .compactMap { $0 as? String }.filter { $0.hasSuffix(".mp3") } ?? []
    }

    @Test("Next and Previous move through stations.json: the station heard, its title and CanGoNext/CanGoPrevious on the bus; the station left is disconnected; --record follows the station")
    func nextAndPrevious() async throws {
        let bus = try await PrivateSessionBus()
        let servers = [try await Self.station(seconds: 120), try await Self.station(seconds: 120)]
        defer { Task { for server in servers { try? await server.stop() } } }
        let stations = bus.folder.appendingPathComponent("stations.json")
        try Data(#"""
            {"stations": [{"id": "one", "name": "Station One", "url": "\#(servers[0].streamURL)"},
                          {"id": "two", "name": "Station Two", "url": "\#(servers[1].streamURL)"}]}
            """#.utf8).write(to: stations)
        let out = bus.folder.appendingPathComponent("out")
        let run = try await AirtapBinary.launch(["play", "one", "--stations", stations.path, "--device", "null", "--buffer", "0.5s",
                                                 "--retries", "0", "--record", "--out", out.path],
                                                environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        func property(_ name: String) async throws -> String {
            try await bus.client("/usr/bin/busctl", ["--user", "get-property", MPRISPlayer.busName, MPRISPlayer.objectPath,
                                                     MPRISPlayer.playerInterface, name])
        }

        try await Self.heard(bus, "Station One")
        #expect(try await property("CanGoNext") == "b true")
        #expect(try await property("CanGoPrevious") == "b false")
        try await bus.playerctl("next")
        try await Self.heard(bus, "Station Two")
        #expect(try await property("CanGoNext") == "b false")
        #expect(try await property("CanGoPrevious") == "b true")
        #expect(try await bus.playerctl("metadata", "xesam:url") == servers[1].streamURL)
        try await waitFor("the first station left") { servers[0].openConnections == 0 }
        // At the end of the list Next does nothing: still the second station, still playing.
        try await bus.playerctl("next")
        try await bus.playerctl("previous")
        try await Self.heard(bus, "Station One")
        try await waitFor("the second station left") { servers[1].openConnections == 0 }
        #expect(servers[0].connectionsServed == 2)
        #expect(servers[1].connectionsServed == 1)
        #expect(try await bus.playerctl("status") == "Playing")

        try await bus.client("/usr/bin/busctl", ["--user", "call", MPRISPlayer.busName, MPRISPlayer.objectPath,
                                                 MPRISPlayer.rootInterface, "Quit"])
        let result = try await run.result()
        #expect(result.status == 0, "\(result.stderr)")
        // The recording went on with each station, into each one's folder.
        for name in ["Station One", "Station Two"] {
            #expect(!Self.recordedMP3s(of: name, in: out).isEmpty, "no recording of \(name): \(result.stderr)")
        }
    }

    @Test("A station Next reaches that cannot be played is passed over to the one after it, --record going on; at the end of the list its error ends play (exit 2)")
    func deadStationsArePassedOver() async throws {
        let bus = try await PrivateSessionBus()
        let servers = [try await Self.station(seconds: 120), try await Self.station(seconds: 120)]
        defer { Task { for server in servers { try? await server.stop() } } }
        let stations = bus.folder.appendingPathComponent("stations.json")
        // A port bound and never listened on: a connection there is refused at once.
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let dead = refusing.url
        try Data(#"""
            {"stations": [{"id": "one", "name": "Station One", "url": "\#(servers[0].streamURL)"},
                          {"id": "dead", "name": "Dead One", "url": "\#(dead)/stream"},
                          {"id": "two", "name": "Station Two", "url": "\#(servers[1].streamURL)"},
                          {"id": "gone", "name": "Dead Two", "url": "\#(dead)/gone"}]}
            """#.utf8).write(to: stations)
        let out = bus.folder.appendingPathComponent("out")
        let run = try await AirtapBinary.launch(["play", "one", "--stations", stations.path, "--device", "null", "--buffer", "0.5s",
                                                 "--retries", "0", "--record", "--out", out.path],
                                                environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        try await Self.heard(bus, "Station One")
        try await bus.playerctl("next")
        try await Self.heard(bus, "Station Two")
        try await bus.playerctl("next")
        let result = try await run.result()
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("cannot play Dead One"), "\(result.stderr)")
        #expect(result.stderr.contains("cannot play Dead Two"), "\(result.stderr)")
        #expect(servers[1].connectionsServed == 1)
        // The recording went on past the station passed over.
        #expect(!Self.recordedMP3s(of: "Station Two", in: out).isEmpty, "no recording of Station Two: \(result.stderr)")
    }

    @Test("--no-mpris stays off the bus and plays")
    func noMPRIS() async throws {
        let bus = try await PrivateSessionBus()
        let server = try await Self.station(seconds: 4)
        defer { Task { try? await server.stop() } }
        let wav = bus.folder.appendingPathComponent("out.wav").path
        let run = try await AirtapBinary.launch(["play", server.streamURL, "--device", "file:'\(wav)',wav", "--buffer", "0.5s",
                                          "--retries", "0", "--no-mpris"],
                                         environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        try await waitFor("audio in the output") { Self.framesWritten(wav) > 44100 / 2 }
        #expect(try await !bus.busNames().contains("org.mpris.MediaPlayer2"))
        let result = try await run.result()
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test("A bus that goes away mid-play: the playing goes on to the stream's end, exit 0")
    func busGoesAway() async throws {
        let bus = try await PrivateSessionBus()
        // The station pauses 2 s in until the bus has gone, so the bus goes mid-play however late
        // a starved task pool sees airtap on it (4.5 s of stream could end first). The pause is
        // the test's, not a stall under test: the stall timeout leaves room for it.
        let server = try await Self.station(seconds: 4.5, stall: .untilResumed(afterSeconds: 2))
        defer { Task { try? await server.stop() } }
        let wav = bus.folder.appendingPathComponent("out.wav").path
        let run = try await AirtapBinary.launch(["play", server.streamURL, "--device", "file:'\(wav)',wav", "--buffer", "0.5s",
                                          "--retries", "0", "--notify", "--stall-timeout", "10m"],
                                         environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        try await waitFor("airtap playing on the bus") { (try? await bus.playerctl("status")) == "Playing" }
        bus.stop()
        server.resumeStall()
        let result = try await run.result()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("stopped: end of stream"), "\(result.stderr)")
        #expect(try WAVAudio(path: wav).frameCount == PlayTests.sentFrames(seconds: 4.5))
    }

    @Test("Without a bus it plays as ever: no error, no line about D-Bus")
    func noBus() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        let server = try await Self.station(seconds: 3)
        defer { Task { try? await server.stop() } }
        let wav = folder.appendingPathComponent("out.wav").path
        let result = try await AirtapBinary.run(
            ["play", server.streamURL, "--device", "file:'\(wav)',wav", "--buffer", "0.5s", "--retries", "0", "--notify"],
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(folder.path)/no-bus-here"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.lowercased().contains("bus"), "\(result.stderr)")
        #expect(!result.stderr.contains("error"), "\(result.stderr)")
        #expect(Self.framesWritten(wav) > 2 * 44100)
    }

    @Test("--notify calls org.freedesktop.Notifications.Notify with each title heard; PropertiesChanged carries each")
    func notify() async throws {
        let bus = try await PrivateSessionBus()
        let server = try await Self.station(seconds: 4)
        defer { Task { try? await server.stop() } }
        let log = bus.folder.appendingPathComponent("monitor").path
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let monitor = Process()
        monitor.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-monitor")
        monitor.arguments = ["--address", bus.address, "type='method_call',interface='org.freedesktop.Notifications'",
                             "type='signal',member='PropertiesChanged'"]
        monitor.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        monitor.standardError = FileHandle.nullDevice
        try ChildProcesses.run(monitor)
        defer { ChildProcesses.terminate(monitor) }
        // The monitor is listening once the bus has given it its name.
        try await waitFor("the monitor on the bus") {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("NameAcquired")
        }
        let wav = bus.folder.appendingPathComponent("out.wav").path
        let result = try await AirtapBinary.run(
            ["play", server.streamURL, "--device", "file:'\(wav)',wav", "--buffer", "0.5s", "--retries", "0", "--notify"],
            environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address])
        #expect(result.status == 0, "\(result.stderr)")
        try await waitFor("the third notification") {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("string \"659\"")
        }
        let seen = try String(contentsOfFile: log, encoding: .utf8)
        #expect(seen.components(separatedBy: "member=Notify").count - 1 == 3, "\(seen)")
        for summary in ["440", "554", "659"] { #expect(seen.contains("string \"\(summary)\"")) }
        #expect(seen.contains("Tone B"))
        // The same titles went out as PropertiesChanged, in the order heard.
        let changes = seen.components(separatedBy: "member=PropertiesChanged").dropFirst()
        let titled = changes.compactMap { change in ["440", "554", "659"].first { change.contains("string \"\($0)\"") } }
        #expect(titled == ["440", "554", "659"], "\(seen)")
    }

    @Test("Titles from strangers reach the bus inert: no control characters, bounded")
    func inertText() {
        #expect(BusText.inert("a\u{0}b\u{1B}[2Jc\u{85}") == "a b [2Jc ")
        let long = String(repeating: "é", count: 5000)
        let kept = BusText.inert(long)
        #expect(kept.utf8.count <= BusText.maximumBytes && kept.utf8.count >= BusText.maximumBytes - 1)
        let notification = TitleNotification(title: TrackInfo(streamTitle: "<b>Band</b> & Co - Song"), stationName: "FM")
        #expect(notification.body == "&lt;b&gt;Band&lt;/b&gt; &amp; Co · FM")
    }

    @Test("What changed, for PropertiesChanged: the title heard and the state, nothing else")
    func changedProperties() {
        let station = Station(id: "tones", name: "Tones FM", urls: ["http://127.0.0.1:1/"])
        var status = PlayerStatus()
        status.state = .playing
        let first = MPRISSnapshot(status: status, station: station)
        #expect(MPRISPlayer.changedProperties(from: first, to: first).isEmpty)
        status.title = TrackInfo(streamTitle: "Artist - Song")
        status.trackNumber = 1
        let titled = MPRISSnapshot(status: status, station: station)
        #expect(MPRISPlayer.changedProperties(from: first, to: titled).map(\.key) == ["Metadata"])
        let metadata = titled.metadata
        #expect(metadata.contains(BusEntry("xesam:title", .string("Song"))))
        #expect(metadata.contains(BusEntry("xesam:artist", .strings(["Artist"]))))
        #expect(metadata.contains(BusEntry("xesam:album", .string("Tones FM"))))
        #expect(metadata.contains(BusEntry("mpris:trackid", .objectPath("/org/airtap/track/0/1"))))
        // Another station counts its titles from 0 again: its first track still has an id of its own.
        let retuned = MPRISSnapshot(status: status, station: station, tuning: 1)
        #expect(MPRISPlayer.changedProperties(from: titled, to: retuned).map(\.key) == ["Metadata"])
        #expect(retuned.metadata.contains(BusEntry("mpris:trackid", .objectPath("/org/airtap/track/1/1"))))
        status.state = .paused
        #expect(MPRISPlayer.changedProperties(from: titled, to: MPRISSnapshot(status: status, station: station))
            .map(\.key) == ["PlaybackStatus"])
    }
}
