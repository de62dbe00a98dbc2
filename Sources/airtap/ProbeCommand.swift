import AirtapKit
import ArgumentParser
import CurlSource

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Connect to a station, show its stream head, format and title changes.",
        discussion: "Ends after --for, at the end of the stream, or on Ctrl-C; exit 0 unless the stream failed."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var logFile: LogFileOption
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("A station id from stations.json, or a URL.", valueName: "station-or-url"), completion: StationCompletion.kind)
    var station: String

    @Option(name: [.customLong("for"), .customShort("t")], help: ArgumentHelp("How long to listen (90, 90s, 15m, 1h30m).", valueName: "duration"))
    var duration: DurationSpec = DurationSpec(seconds: 15)

    @Flag(name: .long, help: "One JSON object per event instead of text.")
    var json = false

    func run() async throws {
        let logger = global.makeLogger(defaultLevel: logFile.defaultLevel(.warning), file: try logFile.open())
        let station = try global.loadCatalog().resolve(self.station)
        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }

        let report = ProbeReport(station: station, style: json ? .json : .text, write: Terminal.output)
        let printer = QueuedSink(report, label: "probe")
        let session = StationSession(
            station: station, loop: loop, options: connection.ingestOptions(for: station), sinks: [printer], logger: logger)
        let run = StationRun(sessions: [session], loop: loop)
        let reason = await run.run(limit: duration.seconds)[0]
        run.finish()
        printer.drain()
        if case .error(let error) = reason { throw error }
    }
}
