import AirtapCuts
import AirtapIngest
import AirtapStations
import AirtapSupport
import CurlSource
import Logging

/// `probe`: what the station says (head, format, titles), printed as it comes.
package struct ProbePlan: Sendable {
    package var station: Station
    package var connection = ConnectionPlan()
    package var seconds: Double = 15
    package var json = false
    /// The station's title delay: its setting and where what was learned is kept.
    package var titleDelay: TitleDelaySetting?
    package var titleDelayFolder: String?
    /// Forget the station's learned title delay instead of probing.
    package var forgetsTitleDelay = false

    package init(station: Station) {
        self.station = station
    }
}

package struct ProbeJob: Sendable {
    package let plan: ProbePlan
    package let logger: Logger

    package init(plan: ProbePlan, logger: Logger) {
        self.plan = plan
        self.logger = logger
    }

    /// Ends at the limit, the end of the stream or a signal; throws how the stream failed.
    package func run() async throws(AirtapError) {
        let station = plan.station
        let journal = plan.titleDelayFolder.flatMap { TitleDelayJournal(stationID: station.id, folder: $0) }
        let status = TitleDelayStatus(setting: plan.titleDelay ?? station.titleDelay ?? .auto, journal: journal)
        let report = ProbeReport(station: station, style: plan.json ? .json : .text, titleDelay: status, write: Terminal.output)
        if plan.forgetsTitleDelay {
            let forgotten = try journal?.forget() ?? false
            return report.say(forgotten ? "title delay forgotten: learning starts again" : "no title delay was learned")
        }
        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        let printer = QueuedSink(report, label: "probe")
        let session = StationSources.make(
            station: station, loop: loop, options: plan.connection.ingestOptions(for: station), sinks: [printer], logger: logger)
        let run = StationRun(sessions: [session], loop: loop)
        let reason = await run.run(limit: plan.seconds)[0]
        run.finish()
        printer.drain()
        if case .error(let error) = reason { throw error }
    }
}
