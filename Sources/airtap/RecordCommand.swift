import AirtapKit
import AirtapRelay
import AirtapStations
import AirtapSupport
import ArgumentParser

struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record stations into one tagged file per track.",
        discussion: """
            Several stations record in one process, each into its own folder. The first track of a \
            connection and the track cut short by the stop go to incomplete/ in the station's folder. \
            Stops cleanly at --for/--until, --max-size, or on SIGINT/SIGTERM/SIGHUP (exit 0). \
            Exit 4 when another airtap records the same station into the same folder.
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("Station ids from stations.json, URLs, or local audio files (- for stdin).", valueName: "station-or-url"), completion: StationCompletion.kind)
    var stations: [String] = []

    @Flag(name: .long, help: "Record every station of the stations file.")
    var all = false

    @Option(name: .long, help: ArgumentHelp("Record only this machine's share: shard K of N (K from 0), by rendezvous hashing of the station ids.", valueName: "K/N"))
    var shard: Shard?

    @Option(name: [.customLong("for"), .customShort("t")], help: ArgumentHelp("Record this long (90s, 15m, 2h, 1h30m).", valueName: "duration"))
    var duration: DurationSpec?

    @Option(name: .long, help: ArgumentHelp("Record until this time of day (local, 24 h).", valueName: "HH:MM"))
    var until: ClockTime?

    @OptionGroup var recording: RecordingArguments

    @OptionGroup var log: LogFileOption

    @OptionGroup var transcode: TranscodeOption

    @Option(name: .long, help: ArgumentHelp("Serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks a free one).", valueName: "host:port"))
    var metricsListen: ListenAddress?

    @Flag(name: .long, help: "One JSON object per line on stdout: titles, files, reconnects, stops (README: Machine-readable output).")
    var json = false

    func validate() throws {
        if duration != nil, until != nil { throw ValidationError("--for and --until cannot be used together") }
        if recording.single != nil, stations.count > 1 || all { throw ValidationError("--single takes one station") }
        if all, !stations.isEmpty { throw ValidationError("name stations or give --all, not both") }
        if !all, stations.isEmpty { throw ValidationError("name at least one station, or give --all") }
    }

    func run() async throws {
        let logFile = try log.open()
        let onTerminal = Terminal.errorIsTerminal
        // On a terminal the status line shows, with --log too; --json scripts get none.
        let statusTerminal = onTerminal && !json ? StatusTerminal() : nil
        let logger = LogSetup.bootstrap(level: global.logLevel(or: onTerminal && log.path == nil ? .warning : .info),
                                        file: logFile, statusTerminal: statusTerminal)
        let catalog = try global.loadCatalog()
        var plan = RecordPlan(stations: try catalog.choose(stations, all: all), recording: try recording.plan(librarySetting: catalog.library))
        plan.shard = shard
        plan.recording.transcode = try transcode.setting()
        plan.limit = RunLimit(seconds: duration?.seconds, until: until)
        plan.connection = connection.plan
        plan.metricsListen = metricsListen
        plan.json = json
        try await RecordJob(plan: plan, logger: logger, statusTerminal: statusTerminal).run()
    }
}
