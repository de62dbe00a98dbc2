/// Where one title's cut is searched, in seconds of audio relative to where the title arrived
/// (plus the split offset): the audio read around it, where the song changed by the station's
/// title delay, and the span a cut may land in.
struct CutWindow: Sendable, Hashable {
    enum Mode: Sendable, Hashable {
        /// No delay in use: the nearest silence within the user's window, else the title itself.
        case aroundTitle
        /// The station's delay: a silence near where the song changed, else an edge in the music
        /// there, else that place itself.
        case corrected(TitleDelay)
    }

    let mode: Mode
    /// The audio read: from `readFrom` (at most 0) to `readTo` (at least 0).
    let readFrom: Double
    let readTo: Double
    /// Where the song changed: 0 around the title, minus the delay once corrected.
    let target: Double
    /// A silence found here moves the cut; `corrected` also looks for an edge here.
    let cutFrom: Double
    let cutTo: Double

    /// Before a delay is known the search reads this far on each side of the title, so that a
    /// silence as far off as any delay the learner accepts teaches it (the cut itself still keeps
    /// to the user's window).
    static let learningReach = TitleDelayLearner.maximumDelay + 0.5
    /// A learned delay resting on this many boundaries no longer needs the learning reach.
    static let settledBoundaries = 5
    /// The span a corrected cut may land in, on each side of where the song changed: the delay's
    /// spread and a quarter second, within these bounds.
    static let correctedSpan = (minimum: 0.75, maximum: 1.5)
    /// A delay set by hand is taken to be as exact as a title can be: within half a metadata
    /// interval at the usual 128 kbit/s and 16000 bytes.
    static let fixedSpread = 0.5

    init(options: SplitOptions, delay: TitleDelay?) {
        if let delay {
            let span = min(max(delay.spread + 0.5, Self.correctedSpan.minimum), Self.correctedSpan.maximum)
            mode = .corrected(delay)
            target = -delay.seconds
            cutFrom = target - span
            cutTo = target + span
            // The user's window around the title too: a title that came far off its delay (an
            // outlier) is still cut in a gap near it, as without a delay. And while the delay
            // rests on few boundaries, as far as while learning: three titles of a station whose
            // titles scatter can agree by chance, and only the silences that disagree, wherever
            // they lie, let such a delay go again.
            let reach = delay.boundaries > 0 && delay.boundaries < Self.settledBoundaries ? Self.learningReach : 0
            readFrom = min(-options.windowBefore, cutFrom - SongEdgeFinder.longSeconds, -reach)
            readTo = max(options.windowAfter, cutTo + SongEdgeFinder.longSeconds, reach)
        } else {
            let reach = options.learnsTitleDelay ? Self.learningReach : 0
            mode = .aroundTitle
            target = 0
            cutFrom = -options.windowBefore
            cutTo = options.windowAfter
            readFrom = -max(options.windowBefore, reach)
            readTo = max(options.windowAfter, reach)
        }
    }

    /// The delay in use for `options` with what the learner knows.
    static func delay(options: SplitOptions, learned: TitleDelay?) -> TitleDelay? {
        if let fixed = options.fixedTitleDelay { return TitleDelay(seconds: fixed, spread: Self.fixedSpread, boundaries: 0) }
        return options.learnsTitleDelay ? learned : nil
    }

    /// The most audio any search with `options` reads before a title's arrival (plus offset).
    static func largestReachBefore(_ options: SplitOptions) -> Double {
        guard options.titleDelay != .off else { return options.windowBefore }
        let corrected = TitleDelayLearner.maximumDelay + Self.correctedSpan.maximum + SongEdgeFinder.longSeconds
        return max(options.windowBefore, corrected)
    }
}

extension CutWindow {
    /// The delay corrected by, if any.
    var delaySeconds: Double? {
        if case .corrected(let delay) = mode { delay.seconds } else { nil }
    }
}
