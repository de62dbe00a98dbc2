import AirtapStations
import AirtapSupport
import CurlSource
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
