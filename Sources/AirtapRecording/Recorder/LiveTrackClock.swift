import AirtapIngest
import Locking

/// The title and time into it of the audio as it arrives, for a status line. The recorder's own
/// count trails the stream by the split search window (3 s by default) and its queue; this sink
/// sits on the session directly, so the status line shows the track time of what has come in.
package final class LiveTrackClock: StreamSink {
    package struct Reading: Sendable, Equatable {
        /// nil until the first title.
        package var title: String?
        package var seconds: Double
    }

    private let state = Locked((title: String?.none, samples: 0, sampleRate: 0))

    package init() {}

    package var reading: Reading {
        state.withLock { state in
            Reading(title: state.title, seconds: state.sampleRate > 0 ? Double(state.samples) / Double(state.sampleRate) : 0)
        }
    }

    package func receive(_ event: StreamEvent) {
        switch event {
        case .packet(let packet):
            state.withLock { state in
                if state.sampleRate != packet.header.sampleRate {
                    // A new rate: rescale what was counted, so the time does not jump.
                    if state.sampleRate > 0 {
                        state.samples = state.samples * packet.header.sampleRate / state.sampleRate
                    }
                    state.sampleRate = packet.header.sampleRate
                }
                state.samples += packet.sampleCount
            }
        case .metadata(let change):
            state.withLock { state in
                state.title = change.info.raw
                state.samples = 0
            }
        case .head, .format, .discontinuity, .connection, .ended:
            break
        }
    }
}
