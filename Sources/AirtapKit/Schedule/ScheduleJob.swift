import AirtapStations
import AirtapSupport
import FoundationEssentials

/// `schedule`: crontab lines that run `airtap record` for the stations with a schedule, printed
/// or merged into the user's crontab.
package struct ScheduleJob: Sendable {
    package let catalog: StationCatalog
    /// The output folder the scheduled recordings write to.
    package let outputDirectory: String
    /// Merge into the crontab instead of printing.
    package let install: Bool

    package init(catalog: StationCatalog, outputDirectory: String, install: Bool) {
        self.catalog = catalog
        self.outputDirectory = outputDirectory
        self.install = install
    }

    package func run() throws(AirtapError) {
        guard let source = catalog.source else {
            throw AirtapError.configuration(StationCatalog.noFileMessage())
        }
        let recordings = try ScheduledRecording.all(in: catalog)
        let plan = CrontabPlan(airtapPath: try Self.executablePath(),
                               stationsPath: Self.absolute(source),
                               outputDirectory: Self.absolute(outputDirectory))
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
    package static func executablePath() throws(AirtapError) -> String {
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
    package static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.path
    }
}
