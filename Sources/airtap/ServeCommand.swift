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
        abstract: "Relay one station to any number of HTTP/ICY listeners (mpv, ffmpeg, VLC, mpd).",
        discussion: """
            One upstream connection, relayed at http://HOST:PORT/stream (also / and /<station id>); \
            /status answers JSON, /listen.pls and /listen.m3u are playlists pointing at the stream. \
            Clients that send 'Icy-MetaData: 1' get titles every 16000 bytes. New listeners get a burst of \
            recent audio; a listener that falls behind skips ahead, one whose socket takes nothing for \
            10 s is dropped. Upstream drops are retried (1 s doubling to 60 s, or --retries times) \
            while listeners stay connected, and a reconnect's repeated audio is skipped. Prints 'listening HOST:PORT' once bound. Ends on Ctrl-C/SIGTERM/SIGHUP or at --for: exit 0.
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("A station id from stations.json, or a URL.", valueName: "station-or-url"), completion: StationCompletion.kind)
    var station: String

    @Option(name: .long, help: ArgumentHelp("Address to listen on; port 0 picks a free one.", valueName: "host:port"))
    var listen = ListenAddress(host: "127.0.0.1", port: 8000)

    @Option(name: .long, help: ArgumentHelp("Listeners beyond this many get 503.", valueName: "n"))
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
        let logger = global.makeLogger(defaultLevel: isatty(STDERR_FILENO) == 1 ? .warning : .notice)
        let station = try global.loadCatalog().resolve(self.station)
        let configuration = RelayConfiguration(
            station: station, host: listen.host, port: listen.port, maxListeners: maxListeners,
            burstSeconds: burst.seconds)
        let server = try await RelayServer.start(configuration, logger: logger)
        let address = listen.display(host: server.host, port: server.port)
        let machine = json ? MachineOutput() : nil
        if let machine {
            machine.writer.emit(.listening(address: address, url: "http://\(address)/stream", station: station))
        } else {
            Terminal.output("listening \(address)")
        }

        var sinks: [any StreamSink] = [server.sink]
        let events = machine?.sink(for: station)
        if let events { sinks.append(events) }
        var locks: [RecordingLock] = []
        var recorder: RecordingArguments.Recorder?
        if record {
            let outputDirectory = try recording.makeOutputDirectory()
            locks = try recording.lock([station], in: outputDirectory)
            // Recording is the side job here: a full disk or --max-size ends it, not the relay.
            let made = try recording.makeRecorder(for: station, outputDirectory: outputDirectory, logger: logger,
                                                  onFileWritten: machine?.fileWritten(station: station)) { reason in
                logger.warning("recording stopped: \(reason)")
            }
            recorder = made
            sinks.append(made.writer)
        }
        defer { withExtendedLifetime(locks) {} }

        // One session for the whole run, reconnecting by itself: positions stay contiguous and a
        // reconnect's burst is spliced, so listeners hear neither repeated frames nor a reset.
        var options = connection.ingestOptions(for: station, reconnects: true)
        options.reconnect?.retriesBeforeFirstAudio = false
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let session = StationSession(station: station, loop: loop, options: options, sinks: sinks, logger: logger,
                                     onStateChange: { state in
                                         server.upstreamChanged(state)
                                         machine?.connectionChanged(state, station: station)
                                     })
        let signals = SignalTrap { session.stop(.userRequest) }
        session.start()
        let timer = duration.map { duration in
            Task {
                try? await Task.sleep(for: .milliseconds(Int(duration.seconds * 1000)))
                session.stop(.limitReached)
            }
        }
        let reason = await session.stopped()
        timer?.cancel()
        signals.cancel()
        await server.shutdown()
        recorder?.writer.drain()
        events?.drain()
        if case .error(let error) = reason { throw error }
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
