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

        let recordingSwitch = RecordingSwitch { [recording] in
            let folder = try recording.makeOutputDirectory()
            let locks = try recording.lock([station], in: folder, logger: logger)
            let recorder = try recording.makeRecorder(for: station, outputDirectory: folder, logger: logger,
                                                      coalescing: 0.25) { reason in
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
                                                      alignsCuts: false, coalescing: 0.25) { _ in }
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
            terminal = PlayTerminal(station: station, player: player, recordingSwitch: recordingSwitch, keeper: keeper,
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

/// Not on a terminal: one log line per state or title change.
final class PlayLog: Sendable {
    let logger: Logger
    private let last = Locked<(state: PlayerState?, title: String?)>((nil, nil))

    init(logger: Logger) {
        self.logger = logger
    }

    func record(_ status: PlayerStatus) {
        // Buffering's percentage changes many times a second: a line when buffering starts, not per percent.
        let phase: PlayerState = if case .buffering = status.state { .buffering(percent: 0) } else { status.state }
        let (stateChanged, titleChanged) = last.withLock { last -> (Bool, Bool) in
            let changes = (last.state != phase, last.title != status.title?.raw)
            last = (phase, status.title?.raw)
            return changes
        }
        if stateChanged {
            logger.info("\(phase == .buffering(percent: 0) ? "buffering" : status.state.description)", metadata: [
                "underruns": "\(status.underruns)", "heard": "\(status.heardSeconds.formatted(decimals: 2))",
            ])
        }
        if titleChanged, let title = status.title {
            logger.info("title: \(title.raw)", metadata: [
                "frames written": "\(status.framesWritten)", "frames heard": "\(status.framesHeard)",
            ])
        }
    }
}

/// On a terminal: raw keys (termios, restored on the way out) and the status line.
final class PlayTerminal: Sendable {
    private let original: termios?
    private let task: Task<Void, Never>
    private let notice = NoticeBoard()

    init(station: Station, player: Player, recordingSwitch: RecordingSwitch, keeper: SongKeeper,
         quit: @escaping @Sendable () -> Void) {
        original = Self.enterRawMode()
        let notice = notice
        task = Task.detached {
            while !Task.isCancelled {
                let message = notice.current
                let line = Self.render(station: station, status: player.status, recording: recordingSwitch.isRecording,
                                       notice: message)
                Terminal.errorPartial("\r\u{1B}[K" + line)
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let keys = PosixThread { [notice] in
            var byte: UInt8 = 0
            var decoder = PlayerKeyDecoder()
            while read(STDIN_FILENO, &byte, 1) == 1 {
                guard let action = decoder.action(for: byte) else { continue }
                let message: String?
                switch action {
                case .togglePause:
                    player.togglePause()
                    message = nil
                case .changeVolume(let delta):
                    player.changeVolume(by: delta)
                    message = nil
                case .saveSong:
                    message = Self.save(keeper: keeper, trackNumber: player.status.trackNumber)
                case .toggleRecording:
                    message = Self.toggle(recordingSwitch)
                case .quit:
                    quit()
                    return
                }
                if let message { notice.show(message) }
            }
        }
        keys.name = "airtap.keys"
        keys.start()
    }

    func stop() {
        task.cancel()
        Terminal.errorPartial("\r\u{1B}[K")
        if var original { tcsetattr(STDIN_FILENO, TCSAFLUSH, &original) }
    }

    private static func save(keeper: SongKeeper, trackNumber: Int) -> String {
        do {
            switch try keeper.save(trackNumber: trackNumber) {
            case .started(let info): return "saving \(info?.raw ?? "this song")"
            case .willStart: return "saving this song"
            case .alreadySaving: return "already saving this song"
            case .unavailable: return "this song is no longer kept"
            }
        } catch {
            return "cannot save: \(error)"
        }
    }

    private static func toggle(_ recordingSwitch: RecordingSwitch) -> String {
        if recordingSwitch.isRecording {
            recordingSwitch.stopRecording()
            return "recording stopped"
        }
        do {
            try recordingSwitch.startRecording()
            return "recording"
        } catch {
            return "cannot record: \(error)"
        }
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

    static func render(station: Station, status: PlayerStatus, recording: Bool, notice: String?) -> String {
        let symbol = switch status.state {
        case .playing, .draining: "▶"
        case .paused: "⏸"
        default: "…"
        }
        let seconds = Int(status.heardSeconds)
        var parts = ["\(symbol) \(station.name)"]
        if let title = status.title, !title.raw.isEmpty { parts.append(title.raw) }
        if status.state != .playing { parts.append(status.state.description) }
        parts.append("\(seconds / 60):\((seconds % 60).zeroPadded(width: 2))")
        if let bitrate = status.bitrate { parts.append("\(bitrate) kbps") }
        parts.append("buffer \(status.bufferedSeconds.formatted(decimals: 1)) s")
        if status.underruns > 0 { parts.append("underruns \(status.underruns)") }
        parts.append("vol \(status.volume)")
        if recording { parts.append("● REC") }
        if let notice { parts.append(notice) }
        var columns = winsize()
        let width = ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &columns) == 0 && columns.ws_col > 0 ? Int(columns.ws_col) - 1 : 119
        return String(InertText.render(parts.joined(separator: " · ")).prefix(width))
    }
}

/// A message the status line shows for a few seconds ("saving …").
final class NoticeBoard: Sendable {
    private let value = Locked<(text: String, until: Date)?>(nil)

    func show(_ text: String) {
        value.withLock { $0 = (text, Date().addingTimeInterval(3)) }
    }

    var current: String? {
        value.withLock { value in
            guard let value, value.until > Date() else { return nil }
            return value.text
        }
    }
}
