import AirtapKit
import AirtapRelay
import AirtapStations
import AirtapSupport
import ArgumentParser
import FoundationEssentials

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Relay stations to any number of HTTP/ICY listeners (mpv, ffmpeg, VLC, mpd, browsers).",
        discussion: """
            One upstream connection per station, each relayed at http://HOST:PORT/<station id> (the first also at \
            /stream); / is a web page with a player per station (and the stream for a player, with one station). \
            /status answers JSON, /status-json.xsl Icecast's status JSON, /metrics Prometheus text; \
            /listen.pls and /listen.m3u (and /<id>.pls, /<id>.m3u) are playlists pointing at the stream. \
            With --library FILE (or --record with the library on), /recordings lists the library's recordings \
            with a player each, serving only files inside --out. \
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

    @OptionGroup var transcode: TranscodeOption

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
        let level = global.logLevel(or: logFile.defaultLevel(Terminal.errorIsTerminal ? .warning : .notice))
        let logger = LogSetup.bootstrap(level: level, file: try logFile.open())
        let catalog = try global.loadCatalog()
        var plan = ServePlan(stations: try catalog.choose(stations))
        if let setting = try transcode.setting() {
            for index in plan.stations.indices { plan.stations[index].transcode = setting }
        }
        plan.listen = listen
        plan.maxListeners = maxListeners
        plan.burstSeconds = burst.seconds
        plan.seconds = duration?.seconds
        plan.recording = record ? try recording.plan(librarySetting: catalog.library) : nil
        // --record of a transcoded serve records what listeners hear.
        plan.recording?.transcode = try transcode.setting()
        if !record, let library = recording.libraryRequest.resolve(over: catalog.library).library.indexPath() {
            // The page may send files from --out (as the recording would have written them) and from the
            // folders the index lists (recorded into, scanned).
            plan.library = ServedLibrary(indexPath: library,
                                         folders: [URL(fileURLWithPath: recording.out).standardizedFileURL.path])
        }
        plan.connection = connection.plan
        plan.json = json
        try await ServeJob(plan: plan, logger: logger).run()
    }
}
