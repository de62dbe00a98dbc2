/// How many tracks one station may start, in wall-clock time: a token bucket of `burst` starts,
/// one more every `refillSeconds`.
///
/// The track floor bounds files per second of *audio*, which is no bound on a station that sends
/// faster than it plays: an Ogg station starting a new link every few pages, read as fast as it
/// sends, made thousands of files a minute, each at or above the floor. A title that comes with
/// the budget spent is handled as one below the floor: it names the track being recorded, whose
/// file goes on (an Ogg link joins it as the next link of a chain).
///
/// The standard budget starts at most 60 tracks in any minute (40 at once, then one every 3 s).
/// The burst is there for honest streams read fast: a recorder catching up after a stalled
/// disk, or a test station sending a few dozen short tracks at once. No real station changes
/// titles every 3 s for long, so no real track is ever joined to its neighbour.
package struct TrackStartBudget: Sendable, Hashable {
    package let burst: Int
    /// One start comes back per interval.
    package let interval: Duration
    /// When the budget would be full again if nothing more started (the generic cell rate
    /// algorithm's theoretical arrival time: exact in durations, no fractions of tokens).
    private var fullAt: ContinuousClock.Instant?

    package static let standard = TrackStartBudget(burst: 40, interval: .seconds(3))

    package init(burst: Int, interval: Duration) {
        self.burst = max(1, burst)
        self.interval = interval
    }

    /// The most tracks it lets start in any 60 seconds.
    package var maximumPerMinute: Int { burst + Int(Duration.seconds(60) / interval) }

    /// Whether a track may start at `now` (and if so, it counts). A clock that seems to step back
    /// only refuses more.
    package mutating func takeStart(at now: ContinuousClock.Instant) -> Bool {
        let due = max(fullAt ?? now, now)
        guard due - now <= interval * (burst - 1) else { return false }
        fullAt = due + interval
        return true
    }

    /// The warning when a title is refused a track of its own, said once per connection.
    var warning: String {
        "titles came faster than \(maximumPerMinute) tracks a minute (\(burst) at once, then one every \(interval.components.seconds) s): a title that comes with that budget spent names the track being recorded, whose file goes on, instead of starting one (said once per connection)"
    }
}
