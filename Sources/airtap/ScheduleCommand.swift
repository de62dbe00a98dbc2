import AirtapKit
import ArgumentParser
import FoundationEssentials

struct ScheduleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule",
        abstract: "Print crontab lines for the stations that have a schedule; --install puts them into your crontab.",
        discussion: """
            Each station of stations.json with a "schedule" ({"cron": "0 22 * * *", "duration": "2h"}) \
            gets a line that runs 'airtap record ID --for DURATION' with absolute paths to this airtap, \
            the stations file and the output folder, logging to airtap-ID.log there. --install replaces \
            the block between '# BEGIN airtap' and '# END airtap' in your crontab and leaves every other \
            line alone; with no scheduled station it removes the block. AIRTAP_CRONTAB names a program \
            to use instead of crontab.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("Output folder the scheduled recordings write to.", valueName: "dir"))
    var out = "recordings"

    @Flag(name: .long, help: "Merge the lines into your crontab instead of printing them.")
    var install = false

    func run() async throws {
        let catalog = try global.loadCatalog()
        guard let source = catalog.source else {
            throw AirtapError.configuration(StationCatalog.noFileMessage())
        }
        let recordings = try ScheduledRecording.all(in: catalog)
        let plan = CrontabPlan(airtapPath: try Self.executablePath(),
                               stationsPath: Self.absolute(source),
                               outputDirectory: Self.absolute(out))
        let lines = try plan.lines(for: recordings)

        guard install else {
            if recordings.isEmpty {
                Terminal.error("airtap: no station in \(plan.stationsPath) has a \"schedule\"")
                return
            }
            Terminal.output(([CrontabBlock.beginMarker] + lines + [CrontabBlock.endMarker]).joined(separator: "\n"))
            return
        }

        if !recordings.isEmpty {
            // record opens its --log file before it makes the output folder, so the first run
            // would fail without it.
            do {
                try FileManager.default.createDirectory(atPath: plan.outputDirectory, withIntermediateDirectories: true)
            } catch {
                throw AirtapError.localIO("cannot create output folder \(plan.outputDirectory): \(describeSystemError(error))")
            }
        }
        let crontab = try CrontabTool.resolve(environment: ProcessInfo.processInfo.environment)
        let merged = try CrontabBlock.merge(lines, into: try crontab.read())
        try crontab.write(merged)
        Terminal.output(recordings.isEmpty
            ? "removed airtap's lines from your crontab (no station in \(plan.stationsPath) has a \"schedule\")"
            : "installed \(recordings.count) recording\(recordings.count == 1 ? "" : "s") into your crontab: \(recordings.map(\.stationID).joined(separator: ", "))")
    }

    /// This binary, as cron must call it. /proc/self/exe rather than argv[0], which is whatever
    /// the shell was given (often just "airtap", found on a PATH that cron does not have).
    static func executablePath() throws(AirtapError) -> String {
        if var path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            // The kernel marks a binary replaced while it runs (a rebuild); the path is still right.
            if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
            return path
        }
        let invoked = CommandLine.arguments.first ?? ""
        guard invoked.contains("/") else {
            throw AirtapError.localIO("cannot tell where this airtap binary is (no /proc/self/exe); run it by its full path")
        }
        return absolute(invoked)
    }

    /// Relative to the current folder, without "." and ".." parts.
    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
