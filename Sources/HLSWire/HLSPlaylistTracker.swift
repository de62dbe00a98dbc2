import ICYWire

/// Follows a media playlist from reload to reload: which segments to fetch, in order, when to
/// load the playlist again (RFC 8216 section 6.3.4), and where segments were lost.
///
/// ```
///  waitingForFirstLoad --loaded--> following(next sequence) --loaded--> following ...
///                                        |  ENDLIST and every segment handed out
///                                        v
///                                      ended
/// ```
///
/// Pure: the caller passes the time each load began (seconds on any monotonic clock) and gets
/// back an `Update`; it performs the fetches and schedules the reload. A live stream starts
/// `liveEdgeSegments` segments from the end, as hls.js and ffmpeg do (RFC 8216 6.3.3: not
/// closer than three target durations); a playlist with ENDLIST plays from its first segment.
package struct HLSPlaylistTracker: Sendable, Hashable {
    package struct Configuration: Sendable, Hashable {
        /// How many segments before the live edge a live playlist starts.
        package var liveEdgeSegments: Int
        /// Target durations outside these seconds are clamped: 0 would reload in a busy loop,
        /// a day would look like a hang.
        package var minTargetDuration: Double
        package var maxTargetDuration: Double
        /// A live playlist that brings no new segment for this many (clamped) target durations
        /// has stalled.
        package var stallTargetDurations: Double

        package init(liveEdgeSegments: Int = 3, minTargetDuration: Double = 1, maxTargetDuration: Double = 30,
                     stallTargetDurations: Double = 6) {
            self.liveEdgeSegments = liveEdgeSegments
            self.minTargetDuration = minTargetDuration
            self.maxTargetDuration = maxTargetDuration
            self.stallTargetDurations = stallTargetDurations
        }
    }

    package enum State: Sendable, Hashable {
        case waitingForFirstLoad
        /// The next segment to hand out has this sequence number.
        case following(nextSequence: Int, lastMediaSequence: Int, lastNewSegmentAt: Double)
        case ended
    }

    /// Why segments were lost between two loads.
    package enum GapReason: Sendable, Hashable {
        /// The window slid past segments not yet fetched (the reload came too late).
        case windowMovedPast
        /// The media sequence number went backwards (a packager restart): the tracker starts
        /// again at the new live edge; what it had not fetched is lost.
        case sequenceWentBackwards
        /// The caller could not fetch a segment (404, a timeout, a body that is not media).
        case segmentFailed
    }

    package struct Gap: Sendable, Hashable {
        package var reason: GapReason
        /// Segments skipped; 0 when unknown (the sequence restarted).
        package var missedSegments: Int

        package init(reason: GapReason, missedSegments: Int) {
            self.reason = reason
            self.missedSegments = missedSegments
        }
    }

    package enum Next: Sendable, Hashable {
        /// Load the playlist again at this time (same clock as the load times passed in).
        case reload(at: Double)
        /// ENDLIST and every segment handed out: the stream ended cleanly.
        case ended
        /// A live playlist brought nothing new for too long.
        case stalled
    }

    package struct Update: Sendable, Hashable {
        /// New segments to fetch, in order.
        package var segments: [HLSSegment] = []
        /// Before `segments`: where the stream is not continuous.
        package var gap: Gap?
        package var next: Next
    }

    package let configuration: Configuration
    package private(set) var state: State = .waitingForFirstLoad
    /// The server's window moves faster than its target duration says (it slid past segments
    /// not yet fetched, or holds less than RFC 8216 6.2.2's three target durations): reloads
    /// follow the segments' own length from then on, as ffmpeg's and mpv's always do.
    package private(set) var windowOutpacesTarget = false

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The sequence number of the next segment a load would hand out; nil before the first load.
    package var nextSequence: Int? {
        if case let .following(next, _, _) = state { next } else { nil }
    }

    /// The target duration actually used: hostile values clamped.
    package func clampedTargetDuration(_ playlist: HLSMediaPlaylist) -> Double {
        min(max(Double(playlist.targetDuration), configuration.minTargetDuration), configuration.maxTargetDuration)
    }

    /// A playlist arrived; its load began at `loadStartedAt`.
    package mutating func loaded(_ playlist: HLSMediaPlaylist, loadStartedAt now: Double) -> Update {
        let target = clampedTargetDuration(playlist)
        switch state {
        case .ended:
            return Update(next: .ended)
        case .waitingForFirstLoad:
            let skip = playlist.hasEndList ? 0 : max(0, playlist.segments.count - configuration.liveEdgeSegments)
            let start = playlist.mediaSequence + skip
            return handOut(playlist, from: start, gap: nil, changed: true, now: now, target: target, lastNewSegmentAt: now)
        case let .following(nextSequence, lastMediaSequence, lastNewSegmentAt):
            if playlist.mediaSequence < lastMediaSequence {
                let skip = playlist.hasEndList ? 0 : max(0, playlist.segments.count - configuration.liveEdgeSegments)
                return handOut(playlist, from: playlist.mediaSequence + skip,
                               gap: Gap(reason: .sequenceWentBackwards, missedSegments: 0),
                               changed: true, now: now, target: target, lastNewSegmentAt: now)
            }
            var gap: Gap?
            var start = nextSequence
            if playlist.mediaSequence > nextSequence {
                gap = Gap(reason: .windowMovedPast, missedSegments: playlist.mediaSequence - nextSequence)
                start = playlist.mediaSequence
            }
            let changed = playlist.endSequence > nextSequence || playlist.mediaSequence != lastMediaSequence
            let hasNew = playlist.endSequence > start
            return handOut(playlist, from: start, gap: gap, changed: changed, now: now, target: target,
                           lastNewSegmentAt: hasNew ? now : lastNewSegmentAt)
        }
    }

    /// The caller moved to another variant of the same master playlist, whose segments carry the
    /// same sequence numbers (RFC 8216 6.2.4): its next load hands out segments from `sequence`
    /// on, even those this variant handed out already, and whatever its window starts at counts
    /// as this variant's, never as a sequence gone backwards.
    package mutating func switchedVariant(resumingAt sequence: Int, now: Double) {
        let lastNewSegmentAt: Double = if case let .following(_, _, at) = state { at } else { now }
        state = .following(nextSequence: sequence, lastMediaSequence: Int.min, lastNewSegmentAt: lastNewSegmentAt)
    }

    /// The caller could not fetch a segment it was handed: a gap of one, spliced like a reconnect.
    package func segmentFailed() -> Gap {
        Gap(reason: .segmentFailed, missedSegments: 1)
    }

    /// A playlist reload failed (a timeout, a 5xx): try again after half a target duration,
    /// unless the playlist has been silent for so long that the stream counts as stalled.
    package func reloadFailed(lastTargetDuration: Int, at now: Double) -> Next {
        let target = min(max(Double(lastTargetDuration), configuration.minTargetDuration), configuration.maxTargetDuration)
        if case let .following(_, _, lastNewSegmentAt) = state,
           now - lastNewSegmentAt >= target * configuration.stallTargetDurations {
            return .stalled
        }
        return .reload(at: now + target / 2)
    }

    private mutating func handOut(_ playlist: HLSMediaPlaylist, from start: Int, gap: Gap?, changed: Bool, now: Double,
                                  target: Double, lastNewSegmentAt: Double) -> Update {
        let firstIndex = max(0, start - playlist.mediaSequence)
        let segments = firstIndex < playlist.segments.count ? Array(playlist.segments[firstIndex...]) : []
        let nextSequence = max(start, playlist.endSequence)
        if playlist.hasEndList {
            state = .ended
            return Update(segments: segments, gap: gap, next: .ended)
        }
        state = .following(nextSequence: nextSequence, lastMediaSequence: playlist.mediaSequence, lastNewSegmentAt: lastNewSegmentAt)
        if now - lastNewSegmentAt >= target * configuration.stallTargetDurations {
            return Update(segments: segments, gap: gap, next: .stalled)
        }
        let interval = reloadInterval(playlist, target: target, windowMovedPast: gap?.reason == .windowMovedPast)
        // RFC 8216 6.3.4: the target duration after a change, half of it after an unchanged reload,
        // both measured from when this load began.
        return Update(segments: segments, gap: gap, next: .reload(at: now + (changed ? interval : interval / 2)))
    }

    /// The target duration, or the last segment's duration (clamped like a target duration) once
    /// the window is known to outpace it: a window of three 2 s segments under a target duration
    /// of 10 s, reloaded every 10 s, loses 4 s of every 10.
    private mutating func reloadInterval(_ playlist: HLSMediaPlaylist, target: Double, windowMovedPast: Bool) -> Double {
        let windowSeconds = playlist.segments.reduce(0) { $0 + $1.duration }
        if windowMovedPast || windowSeconds < 3 * target { windowOutpacesTarget = true }
        guard windowOutpacesTarget, let last = playlist.segments.last?.duration else { return target }
        return min(target, max(last, configuration.minTargetDuration))
    }
}
