import AirtapCuts
import AirtapKit
import AirtapStations
import AirtapSupport
import ArgumentParser
import FoundationEssentials

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Connect to a station, show its stream head, format and title changes.",
        discussion: "Ends after --for, at the end of the stream, or on Ctrl-C; exit 0 unless the stream failed."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var logFile: LogFileOption
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("A station id from stations.json, a URL, or a local audio file (- for stdin).", valueName: "station-or-url"), completion: StationCompletion.kind)
    var station: String

    @Option(name: [.customLong("for"), .customShort("t")], help: ArgumentHelp("How long to listen (90, 90s, 15m, 1h30m).", valueName: "duration"))
    var duration: DurationSpec = DurationSpec(seconds: 15)

    @Flag(name: .long, help: "One JSON object per event instead of text.")
    var json = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("The title delay to show: auto (what was learned), off, or seconds.", valueName: "seconds"))
    var titleDelay: String?

    @Flag(name: .long, help: "Forget the station's learned title delay (learning starts again at its next recording), without connecting.")
    var forgetTitleDelay = false

    func run() async throws {
        let logger = LogSetup.bootstrap(level: global.logLevel(or: logFile.defaultLevel(.warning)), file: try logFile.open())
        var plan = ProbePlan(station: try global.loadCatalog().resolve(station))
        plan.connection = connection.plan
        plan.seconds = duration.seconds
        plan.json = json
        plan.titleDelay = try titleDelay.map { text throws(AirtapError) in try TitleDelaySetting.parse(text) }
        plan.titleDelayFolder = TitleDelayJournal.folder(environment: ProcessInfo.processInfo.environment)
        plan.forgetsTitleDelay = forgetTitleDelay
        try await ProbeJob(plan: plan, logger: logger).run()
    }
}
