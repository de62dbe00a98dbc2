import AirtapSupport

/// What other threads may read about a session.
package enum ConnectionState: Sendable, Hashable, CustomStringConvertible {
    case idle
    /// `attempt` 0 is the first connection, n the n-th retry.
    case connecting(url: String, attempt: Int)
    case streaming(url: String)
    /// Waiting `after` seconds before retry `attempt`, because of `reason`.
    case reconnecting(attempt: Int, after: Double, reason: String)
    case stopped(StopReason)

    /// One word, for JSON and status lines.
    package var name: String {
        switch self {
        case .idle: "idle"
        case .connecting: "connecting"
        case .streaming: "streaming"
        case .reconnecting: "reconnecting"
        case .stopped: "stopped"
        }
    }

    package var description: String {
        switch self {
        case .idle: "idle"
        case .connecting(let url, let attempt): attempt == 0 ? "connecting to \(url)" : "connecting to \(url) (retry \(attempt))"
        case .streaming(let url): "streaming from \(url)"
        case .reconnecting(let attempt, let delay, let reason):
            "reconnecting in \(delay.formatted(decimals: 1)) s (retry \(attempt)) after: \(reason)"
        case .stopped(let reason): "stopped: \(reason)"
        }
    }
}
