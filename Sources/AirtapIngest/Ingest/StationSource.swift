import AirtapStations
import AirtapSupport
import CurlSource
import Locking
import Logging

/// Where a station's events come from: a network session (ICY or HLS, `StationSession`) or a
/// local stream (`LocalStreamSession`). Jobs start, stop and wait for either the same way; both
/// hand their bytes to one `IngestPipeline` and fan its events out to the sinks.
package protocol StationSource: AnyObject, Sendable {
    var station: Station { get }
    var state: ConnectionState { get }
    func start()
    /// From any thread; sinks get the last frame, any title left, then `.ended(reason)`.
    func stop(_ reason: StopReason, after delay: Double)
    /// Returns once the source has stopped, with the reason.
    func stopped() async -> StopReason
}

extension StationSource {
    package func stop(_ reason: StopReason = .userRequest) {
        stop(reason, after: 0)
    }
}

/// The one place that decides which source reads a station.
package enum StationSources {
    package static func make(station: Station, loop: CurlMultiLoop, options: IngestOptions, sinks: [any StreamSink],
                             logger: Logger) -> any StationSource {
        if let local = station.localStream {
            return LocalStreamSession(station: station, stream: local, loop: loop, pacesFiles: options.pacesLocalFiles,
                                      sinks: sinks, logger: logger)
        }
        return StationSession(station: station, loop: loop, options: options, sinks: sinks, logger: logger)
    }
}

/// What other threads may ask of a source: its connection state, and its stop reason once it
/// has stopped. Every source keeps one; its own thread sets it.
final class SourceStatus: Sendable {
    private struct State {
        var connection = ConnectionState.idle
        var waiters: [CheckedContinuation<StopReason, Never>] = []
    }

    private let state = Locked(State())

    var connection: ConnectionState { state.withLock { $0.connection } }

    func set(_ connection: ConnectionState) {
        state.withLock { $0.connection = connection }
    }

    /// The source stopped: whoever waits in `stopped()` hears why.
    func stop(_ reason: StopReason) {
        let waiters = state.withLock { state in
            state.connection = .stopped(reason)
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }

    /// Returns once the source has stopped, with the reason.
    func stopped() async -> StopReason {
        await withCheckedContinuation { continuation in
            let reason = state.withLock { state -> StopReason? in
                if case .stopped(let reason) = state.connection { return reason }
                state.waiters.append(continuation)
                return nil
            }
            if let reason { continuation.resume(returning: reason) }
        }
    }
}
