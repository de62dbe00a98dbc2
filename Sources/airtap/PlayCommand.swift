import AirtapKit
import ALSAPlayback
import ArgumentParser
import CurlSource
import FoundationEssentials
import Glibc
import ICYWire
import Logging
import Locking

struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a station through ALSA, with a status line; record while listening.",
        discussion: """
            Keys on a terminal: space pause/resume, + and - volume, s save the song playing from its \
            beginning, r start/stop recording, q quit. Not on a terminal: log lines, no keys. \
            --device null plays into nothing (in real time); --device "file:'/tmp/x.wav',wav" into a WAV file. \
            Exit 3 when the device cannot be opened.
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var logFile: LogFileOption
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("A station id from stations.json, or a URL.", valueName: "station-or-url"), completion: StationCompletion.kind)
    var station: String

    @Option(name: .long, help: ArgumentHelp("ALSA PCM to play on ('help' lists the names ALSA knows).", valueName: "ALSA_NAME"))
    var device = "default"

    @Option(name: .long, help: ArgumentHelp("Audio to queue before playing, and again after running dry.", valueName: "duration"))
    var buffer = DurationSpec(seconds: 1)

    @Option(name: .long, help: ArgumentHelp("Volume, 0-100 (software gain).", valueName: "0-100"))
    var volume = 100

    @Option(name: [.customLong("for"), .customShort("t")], help: ArgumentHelp("Stop after this long.", valueName: "duration"))
    var duration: DurationSpec?

    @Flag(name: .long, help: "Record per track while playing (the recording options below apply; same connection).")
    var record = false

    @OptionGroup(title: "Recording (--record, and the s and r keys)") var recording: RecordingArguments

    @Flag(name: .long, help: "One JSON object per line on stdout: titles as they arrive, reconnects, the stop (README: Machine-readable output).")
    var json = false

    func validate() throws {
        guard (0...100).contains(volume) else { throw ValidationError("--volume must be 0-100") }
        guard buffer.seconds <= 120 else { throw ValidationError("--buffer must be at most 2m") }
    }

    func run() async throws {
        if device == "help" {
            for known in PCMOutput.knownDevices() {
                Terminal.output(known.description.isEmpty ? known.name : "\(known.name)\t\(known.description)")
            }
            return
        }
        let onTerminal = isatty(STDIN_FILENO) == 1 && isatty(STDERR_FILENO) == 1
        let logger = global.makeLogger(defaultLevel: logFile.defaultLevel(onTerminal ? .warning : .info), file: try logFile.open())
        let station = try global.loadCatalog().resolve(self.station)

        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        let log = PlayLog(logger: logger)
        let onChange: @Sendable (PlayerStatus) -> Void = { status in if !onTerminal { log.record(status) } }
        let player = Player(
            configuration: PlayerConfiguration(device: device, bufferSeconds: buffer.seconds, volume: volume),
            logger: logger,
            onChange: onChange,
            onNetworkSlack: { loop.setBatching($0) })
        // Opens the device first: a missing one fails at once (exit 3), before connecting.
        try player.start()

        let library = try recording.openLibrary(logger: logger)
        let recordingSwitch = RecordingSwitch { [recording] in
            let folder = try recording.makeOutputDirectory()
            let locks = try recording.lock([station], in: folder, logger: logger)
            let recorder = try recording.makeRecorder(for: station, outputDirectory: folder, logger: logger,
                                                      coalescing: 0.25, library: library) { reason in
                // --max-size or a disk error ends the recording, not the playing.
                logger.notice("recording stopped: \(reason)")
            }
            return RecordingSwitch.Recording(sink: recorder.writer) { withExtendedLifetime(locks) {} }
        }
        let keeper = SongKeeper { [recording] wholeTrack in
            // A saved song is one file even when --single was given for --record.
            var arguments = recording
            arguments.single = nil
            let folder = try arguments.makeOutputDirectory()
            let recorder = try arguments.makeRecorder(for: station, outputDirectory: folder, logger: logger,
                                                      alignsCuts: false, coalescing: 0.25,
                                                      library: library?.indexingOnly) { _ in }
            if wholeTrack { recorder.tracks?.startsAtTrackBoundary() }
            return recorder.writer
        }
        // The keeper's songs begin and end where a recording cuts (in the gap): it sees the
        // stream through the split aligner, which decodes around title changes, so off the
        // ingest thread, like a recorder. Nothing waits for it (a save it cannot start yet is
        // promised), so it takes its events a second at a time: fewer wake-ups than the player's.
        let keeperFeed = QueuedSink(try recording.split.wrap(keeper, for: station, logger: logger), label: "play.keeper",
                                    coalescing: 1, target: .global(qos: .utility))

        let machine = json ? MachineOutput() : nil
        let events = machine?.sink(for: station, emitsStop: false)
        var sinks: [any StreamSink] = [player.feed, recordingSwitch, keeperFeed]
        if let events { sinks.append(events) }
        let session = StationSession(
            station: station, loop: loop, options: connection.ingestOptions(for: station, reconnects: true),
            sinks: sinks, logger: logger)
        let started = ContinuousClock.now
        if record { try recordingSwitch.startRecording() }

        let stopAll: @Sendable (StopReason) -> Void = { reason in
            session.stop(reason)
            player.stop(reason)
        }
        let run = StationRun(sessions: [session], loop: loop, signals: SignalTrap.stopSignals + [SIGQUIT], stop: stopAll)
        run.start(limit: duration?.seconds)

        var terminal: PlayTerminal?
        if onTerminal {
            let controls = PlayControls(player: player, recordingSwitch: recordingSwitch, keeper: keeper)
            terminal = PlayTerminal(station: station, player: player, controls: controls, recordingSwitch: recordingSwitch,
                                    quit: { run.stop(.userRequest) })
        }
        let reason = await player.stopped()
        terminal?.stop()
        terminal = nil
        session.stop(StopReason.userRequest)
        _ = await run.stopped()
        run.finish()
        recordingSwitch.stopRecording(StopReason.userRequest)
        keeperFeed.drain()
        keeper.finish()
        if let machine, let events {
            events.drain()
            machine.writer.emit(.stop(reason, seconds: (ContinuousClock.now - started).seconds, station: station))
        }
        let status = player.status
        logger.info("stopped: \(reason)", metadata: [
            "underruns": "\(status.underruns)", "dropped packets": "\(status.droppedPackets)",
            "seconds": "\(status.heardSeconds.formatted(decimals: 1))",
        ])
        if case .error(let error) = reason { throw error }
    }
}

/// On a terminal: raw keys (termios, restored on the way out) and the status line, redrawn four
/// times a second. What a key does and what the line shows are `PlayControls` and `PlayStatusLine`.
final class PlayTerminal: Sendable {
    private let original: termios?
    private let task: Task<Void, Never>
    private let notice = NoticeBoard()

    init(station: Station, player: Player, controls: PlayControls, recordingSwitch: RecordingSwitch,
         quit: @escaping @Sendable () -> Void) {
        original = Self.enterRawMode()
        let notice = notice
        task = Task.detached {
            while !Task.isCancelled {
                let line = PlayStatusLine.render(stationName: station.name, status: player.status,
                                                 recording: recordingSwitch.isRecording, notice: notice.current(),
                                                 width: PlayStatusLine.width(columns: Self.columns()))
                Terminal.errorPartial(StatusTerminal.clearLine + line)
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let keys = PosixThread { [notice] in
            var byte: UInt8 = 0
            var decoder = PlayerKeyDecoder()
            while read(STDIN_FILENO, &byte, 1) == 1 {
                guard let action = decoder.action(for: byte) else { continue }
                switch controls.perform(action) {
                case .notice(let message):
                    if let message { notice.show(message) }
                case .quit:
                    quit()
                    return
                }
            }
        }
        keys.name = "airtap.keys"
        keys.start()
    }

    func stop() {
        task.cancel()
        Terminal.errorPartial(StatusTerminal.clearLine)
        if var original { tcsetattr(STDIN_FILENO, TCSAFLUSH, &original) }
    }

    /// Keys arrive one by one without echo; Ctrl-C still sends SIGINT (ISIG stays on).
    private static func enterRawMode() -> termios? {
        var settings = termios()
        guard tcgetattr(STDIN_FILENO, &settings) == 0 else { return nil }
        let original = settings
        settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings)
        return original
    }

    /// stderr's width (TIOCGWINSZ), nil when it cannot be read.
    private static func columns() -> Int? {
        var size = winsize()
        return ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : nil
    }
}
