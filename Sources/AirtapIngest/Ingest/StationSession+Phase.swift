import AirtapSupport
import CurlSource
import FoundationEssentials
import ICYWire
import Locking
import Logging

/// What a station session holds: its one phase and what each phase owns, and what rounds of
/// connecting and retrying carry.
extension StationSession {
    typealias Candidate = CandidateList.Candidate

    /// One round of connecting: the station's URLs from the first, playlists expanded in place.
    struct Round {
        var candidates = CandidateList(urls: [])
        /// Why the last candidate failed; what the round ends with when none is left.
        var lastError: AirtapError?
    }

    /// Across rounds: how retrying went, and whether any connection ever delivered audio.
    struct RetryHistory {
        var progress = ReconnectPolicy.Progress()
        var random = SystemRandomNumberGenerator()
        /// The last reason a connection failed, kept across retries: a run that never streamed ends with it.
        var lastFailure: AirtapError?
        /// Set once any connection delivered audio: from then on a 4xx is the server's passing state
        /// (Icecast answers 404 while a mount has no source), not a wrong URL.
        var hasStreamed = false

        mutating func decide(_ policy: ReconnectPolicy, after failure: ReconnectPolicy.Failure,
                             streamedFor seconds: Double) -> ReconnectPolicy.Decision {
            policy.decide(after: failure, streamedFor: seconds, progress: &progress, random: &random)
        }

        /// How a failure counts against the retry budget: errors the request itself causes are
        /// retried a few times only, unless the station has streamed before.
        func failureKind(of error: AirtapError) -> ReconnectPolicy.Failure {
            guard !hasStreamed else { return .transient }
            switch error {
            case .httpStatus(_, let status, _, _) where (400..<500).contains(status) && status != 408 && status != 429:
                return .clientError
            case .notAudio, .playlist, .unsupportedFormat, .usage, .configuration, .unknownStation:
                return .clientError
            default:
                return .transient
            }
        }
    }

    /// The connection streaming now, and what belongs to it alone.
    struct Streaming {
        let transfer: TransferID
        let candidate: Candidate
        let pipeline: IngestPipeline
        /// The server's answer, for the error when the connection brings no audio.
        let head: ResponseHead
        let since: ContinuousClock.Instant
        /// The transfer waits for a congested sink.
        var isPaused = false
    }

    /// A segmented stream being followed: it fetches its playlist and parts itself.
    struct Following {
        let stream: any FollowedStream
        let candidate: Candidate
        let since: ContinuousClock.Instant
    }

    /// The single state of the connection, with what each state owns.
    enum Phase {
        case idle
        case requesting(TransferID, Candidate)
        /// `url`: where the playlist finally came from (after redirects): its relative URIs resolve there.
        case readingPlaylist(TransferID, Candidate, url: String, format: PlaylistFormat?, body: [UInt8])
        case streaming(Streaming)
        case following(Following)
        /// Waiting for the backoff delay before the next attempt.
        case reconnecting(attempt: Int)
        case stopped(StopReason)
    }
}
