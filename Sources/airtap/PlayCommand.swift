import AirtapKit
import AirtapPlayback
import AirtapSupport
import ArgumentParser

struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a station through ALSA, with a status line; record while listening.",
        discussion: """
            Keys on a terminal: space pause/resume, + and - volume, s save the song playing from its \
            beginning, r start/stop recording, > and < the next and previous station of stations.json, q quit. Not on a terminal: log lines, no keys. \
            --device null plays into nothing (in real time); --device "file:'/tmp/x.wav',wav" into a WAV file. \
            Exit 3 when the device cannot be opened. \
            On a desktop (DBUS_SESSION_BUS_ADDRESS set) media keys, playerctl and the "now playing" panel \
            control it over MPRIS2 (org.mpris.MediaPlayer2.airtap); Stop disconnects the station until Play, Quit \
            ends play; Next and Previous move through stations.json when a station id was given. No bus, no \
            controls, no error.
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var logFile: LogFileOption
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("A station id from stations.json, a URL, or a local audio file (- for stdin).", valueName: "station-or-url"), completion: StationCompletion.kind)
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

    @Flag(name: .customLong("no-mpris"), help: "Stay off the desktop's session bus: no MPRIS2 media controls.")
    var noMPRIS = false

    @Flag(name: .long, help: "A desktop notification (org.freedesktop.Notifications) at each title heard.")
    var notify = false

    @Flag(name: .long, help: "One JSON object per line on stdout: titles as they arrive, reconnects, the stop (README: Machine-readable output).")
    var json = false

    func validate() throws {
        guard (0...100).contains(volume) else { throw ValidationError("--volume must be 0-100") }
        guard buffer.seconds <= 120 else { throw ValidationError("--buffer must be at most 2m") }
    }

    func run() async throws {
        if device == "help" { return PlayJob.listDevices() }
        let onTerminal = Terminal.isInteractive
        let level = global.logLevel(or: logFile.defaultLevel(onTerminal ? .warning : .info))
        let logger = LogSetup.bootstrap(level: level, file: try logFile.open())
        let catalog = try global.loadCatalog()
        var plan = PlayPlan(dial: try catalog.dial(station))
        plan.onTerminal = onTerminal
        plan.connection = connection.plan
        plan.player = PlayerConfiguration(device: device, bufferSeconds: buffer.seconds, volume: volume)
        plan.seconds = duration?.seconds
        plan.records = record
        plan.recording = try recording.plan(librarySetting: catalog.library)
        plan.json = json
        plan.desktop = DesktopSession.Features(mpris: !noMPRIS, notify: notify)
        try await PlayJob(plan: plan, logger: logger).run()
    }
}
