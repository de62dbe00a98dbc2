/// When to try a station again after a drop, a stall or a failed connect.
///
/// Exponential backoff with jitter (1 s, doubling, capped at 60 s), reset after a minute of good
/// streaming, so a station that drops once a day is retried at once while one that is down is
/// not hammered. Client errors (4xx other than 408 and 429) are the request's fault and are not
/// retried more than three times. Pure: the caller passes how long the connection streamed and
/// a random source, so tests need neither sockets nor clocks.
package struct ReconnectPolicy: Sendable, Hashable {
    package var initialDelay: Double
    package var maxDelay: Double
    /// Streaming this long counts as recovered: the next failure starts from `initialDelay`.
    package var resetAfter: Double
    /// nil: forever.
    package var maxRetries: Int?
    package var maxClientErrorRetries: Int
    /// Each delay is scaled by a random factor in 1 ± jitter, so many clients don't retry in step.
    package var jitter: Double
    /// false: a session whose first connection fails, before any audio, gives up at once (serve:
    /// a wrong URL should not keep a relay waiting in silence). true (record, play): a station that
    /// is down when cron starts the recording is waited for.
    package var retriesBeforeFirstAudio: Bool

    package init(initialDelay: Double = 1, maxDelay: Double = 60, resetAfter: Double = 60, maxRetries: Int? = nil,
                maxClientErrorRetries: Int = 3, jitter: Double = 0.2, retriesBeforeFirstAudio: Bool = true) {
        self.retriesBeforeFirstAudio = retriesBeforeFirstAudio
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.resetAfter = resetAfter
        self.maxRetries = maxRetries
        self.maxClientErrorRetries = maxClientErrorRetries
        self.jitter = jitter
    }

    /// What failed, as far as retrying is concerned.
    package enum Failure: Sendable, Hashable {
        /// A drop, a stall, a refused or timed-out connect, a 5xx, a 408 or 429: worth retrying.
        case transient
        /// A 4xx (other than 408/429), not audio, a bad playlist: retrying rarely helps.
        case clientError
    }

    package enum Decision: Sendable, Hashable {
        case retry(attempt: Int, after: Double)
        case giveUp
    }

    /// The count of attempts so far, carried by the session between connections.
    package struct Progress: Sendable, Hashable {
        package internal(set) var attempt = 0
        package internal(set) var clientErrors = 0
        package init() {}
    }

    package func decide(after failure: Failure, streamedFor seconds: Double, progress: inout Progress,
                       random: inout some RandomNumberGenerator) -> Decision {
        if seconds >= resetAfter {
            progress = Progress()
        }
        if failure == .clientError {
            progress.clientErrors += 1
            if progress.clientErrors > maxClientErrorRetries { return .giveUp }
        }
        if let maxRetries, progress.attempt >= maxRetries { return .giveUp }
        progress.attempt += 1
        let exponent = min(progress.attempt - 1, 30)
        let base = min(maxDelay, initialDelay * Double(1 << exponent))
        let factor = jitter > 0 ? Double.random(in: (1 - jitter)...(1 + jitter), using: &random) : 1
        return .retry(attempt: progress.attempt, after: min(maxDelay, base * factor))
    }
}
