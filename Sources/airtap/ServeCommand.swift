import AirtapKit
import AirtapRelay
import ArgumentParser
import CurlSource
import FoundationEssentials
import Glibc
import Logging

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Relay stations to any number of HTTP/ICY listeners (mpv, ffmpeg, VLC, mpd, browsers).",
        discussion: """
            One upstream connection per station, each relayed at http://HOST:PORT/<station id> (the first also at \
            /stream); / is a web page with a player per station (and the stream for a player, with one station). \
            /status answers JSON, /status-json.xsl Icecast's status JSON, /metrics Prometheus text; \
            /listen.pls and /listen.m3u (and /<id>.pls, /<id>.m3u) are playlists pointing at the stream. \
            Clients that send 'Icy-MetaData: 1' get titles every 16000 bytes. New listeners get a burst of \
            recent audio; a listener that falls behind skips ahead, one whose socket takes nothing for \
            10 s is dropped. Upstream drops are retried (1 s doubling to 60 s, or --retries times) \
            while listeners stay connected, and a reconnect's repeated audio is skipped. Prints 'listening HOST:PORT' once bound. Ends on Ctrl-C/SIGTERM/SIGHUP or at --for: exit 0, \
            unless a station never sent audio (2) or --record failed (3).
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var logFile: LogFileOption
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("Station ids from stations.json, or URLs; each is served at /<id>.", valueName: "station-or-url"),
              completion: StationCompletion.kind)
    var stations: [String]

    @Option(name: .long, help: ArgumentHelp("Address to listen on; port 0 picks a free one.", valueName: "host:port"))
    var listen = ListenAddress(host: "127.0.0.1", port: 8000)

    @Option(name: .long, help: ArgumentHelp("Listeners of one station beyond this many get 503.", valueName: "n"))
    var maxListeners = 64

    @Option(name: .long, help: ArgumentHelp("Recent audio a new listener gets at once.", valueName: "duration"))
    var burst = DurationSpec(seconds: 2)

    @Option(name: [.customLong("for"), .customShort("t")], help: ArgumentHelp("Stop after this long.", valueName: "duration"))
    var duration: DurationSpec?

    @Flag(name: .long, help: "Record the station as well (takes the record options below).")
    var record = false

    @OptionGroup(title: "Record options (with --record)") var recording: RecordingArguments

    @Flag(name: .long, help: "One JSON object per line on stdout, 'listening' first (README: Machine-readable output).")
    var json = false

    func validate() throws {
        guard maxListeners >= 1 else { throw ValidationError("--max-listeners must be at least 1") }
        guard burst.seconds <= 60 else { throw ValidationError("--burst must be at most 60s") }
    }

    func run() async throws {
        let logger = global.makeLogger(defaultLevel: logFile.defaultLevel(isatty(STDERR_FILENO) == 1 ? .warning : .notice),
                                       file: try logFile.open())
        let catalog = try global.loadCatalog()
        var chosen: [Station] = []
        for argument in stations {
            let station = try catalog.resolve(argument)
            guard !chosen.contains(where: { $0.id == station.id }) else {
                throw AirtapError.usage("station '\(station.id)' is named twice")
            }
            chosen.append(station)
        }
        let configuration = RelayConfiguration(
            stations: chosen, host: listen.host, port: listen.port, maxListeners: maxListeners, burstSeconds: burst.seconds)
        let server = try await RelayServer.start(configuration, logger: logger)
        let address = listen.display(host: server.host, port: server.port)
        let machine = json ? MachineOutput() : nil
        if let machine {
            machine.writer.emit(.listening(address: address, url: "http://\(address)/stream", station: chosen[0]))
        } else {
            Terminal.output("listening \(address)")
        }

        var locks: [RecordingLock] = []
        var recorders: [StationRecorder] = []
        var eventSinks: [QueuedSink] = []
        let outputDirectory = record ? try recording.makeOutputDirectory() : ""
        if record { locks = try recording.lock(chosen, in: outputDirectory, logger: logger) }
        // One bound on --on-track-done commands for the whole process, however many stations.
        let hooks = record ? recording.onTrackDone.map { TrackDoneHooks(command: $0, logger: logger) } : nil
        let library = record ? try recording.openLibrary(logger: logger) : nil
        defer { withExtendedLifetime(locks) {} }

        // One session per station for the whole run, reconnecting by itself: positions stay
        // contiguous and a reconnect's burst is spliced, so listeners hear neither repeated frames
        // nor a reset. All of them on one curl loop.
        // A quarter second: listeners are players, but a relay need not wake per network read.
        let loop = try CurlMultiLoop.forCommand(batching: .milliseconds(250))
        defer { loop.shutdown() }
        var sessions: [StationSession] = []
        for station in chosen {
            var sinks: [any StreamSink] = server.sink(for: station.id).map { [$0] } ?? []
            if let events = machine?.sink(for: station) {
                sinks.append(events)
                eventSinks.append(events)
            }
            if record {
                // Recording is the side job here: a full disk or --max-size ends it, not the relay.
                let made = try recording.makeRecorder(for: station, outputDirectory: outputDirectory, logger: logger,
                                                      library: library, trackDoneHooks: hooks,
                                                      onFileWritten: machine?.fileWritten(station: station)) { reason in
                    logger.warning("recording \(station.id) stopped: \(reason)")
                }
                recorders.append(made)
                sinks.append(made.writer)
            }
            var options = connection.ingestOptions(for: station, reconnects: true)
            options.reconnect?.retriesBeforeFirstAudio = false
            sessions.append(StationSession(station: station, loop: loop, options: options, sinks: sinks, logger: logger))
        }
        let run = StationRun(sessions: sessions, loop: loop)
        run.start(limit: duration?.seconds)
        // The first station to fail ends the server; otherwise all end together at --for or a signal.
        let firstError = await run.stoppedAtFirstError()
        run.finish()
        await server.shutdown()
        for recorder in recorders { recorder.writer.drain() }
        await hooks?.finish(waitingAtMost: 30)
        for events in eventSinks { events.drain() }
        if let firstError { throw firstError }
        // The relay went on after a recording failed (a full disk), but the run did not do all it
        // was asked: exit with the recording's error rather than 0.
        if let recordingFailure = recorders.lazy.compactMap({ $0.failure() }).first { throw recordingFailure }
    }
}

/// `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (the host then stays 127.0.0.1).
struct ListenAddress: ExpressibleByArgument, Hashable {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init?(argument: String) {
        var host = "127.0.0.1"
        var portText = Substring(argument)
        if let colon = argument.lastIndex(of: ":") {
            var hostPart = argument[..<colon]
            if hostPart.hasPrefix("["), hostPart.hasSuffix("]") { hostPart = hostPart.dropFirst().dropLast() }
            if !hostPart.isEmpty { host = String(hostPart) }
            portText = argument[argument.index(after: colon)...]
        }
        guard let port = Int(portText), (0...65535).contains(port), !host.contains(where: \.isWhitespace) else { return nil }
        self.host = host
        self.port = port
    }

    var defaultValueDescription: String { display(host: host, port: port) }

    func display(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
