import AirtapCuts
import AirtapIngest
import AirtapKit
import AirtapRelay
import AirtapStations
import AirtapSupport
import ArgumentParser
import FoundationEssentials

struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Relay a station's audio frames to a file (with a .cue sheet), to stdout, or to an Icecast server.",
        discussion: """
            Only audio frames are written: no ICY metadata, no ID3 tags, so 'airtap relay demo --to - | mpv -' \
            and '| ffmpeg -i - ...' work. With --to FILE the frames grow in FILE.part (renamed to FILE at the \
            end) and FILE.cue gets a TRACK per title, as with 'record --single'. Ends at --for, at the end \
            of the stream, on Ctrl-C/SIGTERM/SIGHUP, or when the reader of stdout goes away: exit 0. \
            To a file or stdout the relay ends with its stream; with --retries N a dropped stream is \
            reconnected up to N times (spliced: no repeated frames). \
            --to icecast://source@HOST:PORT/MOUNT (or shoutcast://HOST:PORT) sends the stream to your own \
            Icecast (SHOUTcast v1) server as its source, with every title change; the password comes from \
            --password-file or AIRTAP_ICECAST_PASSWORD, never the command line. A push reconnects to the \
            station and to the server forever (with backoff), unless --retries N; it resumes where the \
            stream is now. A first connection that fails (a wrong address or password) ends it at once; \
            with --retries N a station or server not up yet is tried again, a refused login is not.
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var logFile: LogFileOption
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("A station id from stations.json, a URL, or a local audio file (- for stdin).", valueName: "station-or-url"), completion: StationCompletion.kind)
    var station: String

    @Option(name: .long, help: ArgumentHelp("Where the frames go: a file, - for stdout, or icecast://source@HOST:PORT/MOUNT.", valueName: "file|-|url"))
    var to: String

    @Option(name: .long, help: ArgumentHelp("The Icecast source password, in the first line of this file (else AIRTAP_ICECAST_PASSWORD).", valueName: "file"))
    var passwordFile: String?

    @Option(name: [.customLong("for"), .customShort("t")], help: ArgumentHelp("How long to relay (90s, 15m, 2h, 1h30m).", valueName: "duration"))
    var duration: DurationSpec?

    @OptionGroup var transcode: TranscodeOption

    func validate() throws {
        if to.isEmpty { throw ValidationError("--to needs a file name, or - for stdout") }
        if transcode.transcode != nil, to.contains("://") {
            throw ValidationError("--transcode writes to a file or -, not to an Icecast mount")
        }
    }

    func run() async throws {
        let destination = try RelayDestination.parse(to, passwordFile: passwordFile)
        let logger = LogSetup.bootstrap(level: global.logLevel(or: logFile.defaultLevel(.warning)), file: try logFile.open())
        var plan = RelayPlan(station: try global.loadCatalog().resolve(station), destination: destination)
        plan.connection = connection.plan
        plan.seconds = duration?.seconds
        plan.transcode = try transcode.setting()
        plan.titleDelayFolder = TitleDelayJournal.folder(environment: ProcessInfo.processInfo.environment)
        try await RelayJob(plan: plan, logger: logger).run()
    }

    /// What the push asks of its station (`RelayJob.pushOptions`).
    func pushOptions(for station: Station) -> IngestOptions {
        RelayJob.pushOptions(connection.plan, for: station)
    }
}
