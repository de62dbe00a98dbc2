import AirtapIngest
import AirtapSupport
import Locking

/// The sessions a job owns, by station id. A sink is built before its session (the session
/// takes its sinks), yet a recorder or a relay must end its station (--max-size, a full disk,
/// a reader that left): it stops the station through here, by id.
package final class JobSessions: Sendable {
    private let sessions = Locked<[String: any StationSource]>([:])

    package init() {}

    /// Keeps `session` as its station's, and hands it back.
    @discardableResult
    package func add(_ session: any StationSource) -> any StationSource {
        sessions.withLock { $0[session.station.id] = session }
        return session
    }

    /// Stops the station's session, if the job has made it yet.
    package func stop(_ stationID: String, _ reason: StopReason) {
        sessions.withLock { $0[stationID] }?.stop(reason)
    }

    /// What a sink calls to end its station.
    package func stopper(for stationID: String) -> @Sendable (StopReason) -> Void {
        { [self] reason in stop(stationID, reason) }
    }
}
