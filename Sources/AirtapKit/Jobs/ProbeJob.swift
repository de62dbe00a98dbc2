import CurlSource
import Logging

/// `probe`: what the station says (head, format, titles), printed as it comes.
package struct ProbePlan: Sendable {
    package var station: Station
    package var connection = ConnectionPlan()
    package var seconds: Double = 15
    package var json = false

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
        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        let report = ProbeReport(station: station, style: plan.json ? .json : .text, write: Terminal.output)
        let printer = QueuedSink(report, label: "probe")
        let session = StationSession(
            station: station, loop: loop, options: plan.connection.ingestOptions(for: station), sinks: [printer], logger: logger)
        let run = StationRun(sessions: [session], loop: loop)
        let reason = await run.run(limit: plan.seconds)[0]
        run.finish()
        printer.drain()
        if case .error(let error) = reason { throw error }
    }
}
