/// Chooses the frame boundary a title change cuts at, from the level of each frame around it.
///
/// Pure: no audio, no decoder. `levels[i]` is frame `i`'s RMS level in dBFS; boundary `k`
/// (0...levels.count) is the point between frame `k - 1` and frame `k`.
struct SplitPointFinder: Sendable, Hashable {
    /// A frame is silent when its level is strictly below this (dBFS).
    package var silenceLevel: Float
    /// A run of silent frames counts as a gap from this many frames on.
    package var minimumSilentFrames: Int

    package init(silenceLevel: Float, minimumSilentFrames: Int) {
        self.silenceLevel = silenceLevel
        self.minimumSilentFrames = max(1, minimumSilentFrames)
    }

    /// From the user's terms: `silenceLength` seconds is that many frames rounded up, so a
    /// shorter run never qualifies.
    package init(options: SplitOptions, frameSeconds: Double) {
        let frames = frameSeconds > 0 ? (options.silenceLength / frameSeconds - 1e-9).rounded(.up) : 1
        self.init(silenceLevel: Float(options.silenceLevel), minimumSilentFrames: Int(min(max(frames, 1), 1e6)))
    }

    struct Choice: Sendable, Hashable {
        /// The boundary to cut at.
        package let boundary: Int
        /// The frames of the silence it lies in; nil when no silence qualified (cut at the reference).
        package let silence: Range<Int>?
    }

    /// The middle of the qualifying silence nearest `reference` (distance 0 when the reference lies
    /// in it); among equally near ones the quietest (lowest mean level), then the earlier.
    /// Without any, `reference` itself (clamped to the boundaries that exist).
    ///
    /// Nearest, not longest or quietest, on purpose: a window of ±3 s can hold a quiet passage
    /// or the next song's gap, and jumping to it is the seconds-long error that makes a plain
    /// silence search worse than the metadata point. Linear, allocation-free.
    ///
    /// - Parameter taken: frames of the silence the previous title change already cut in; they
    ///   count as not silent. Without this, a title at a hard cut a few seconds after a gap jumps
    ///   back into it. What lies beyond them still counts: the previous window may have seen only
    ///   the start of a gap that belongs to this change.
    package func choose(levels: UnsafeBufferPointer<Float>, reference: Int, taken: Range<Int>? = nil) -> Choice {
        let reference = min(max(reference, 0), levels.count)
        var best: (run: Range<Int>, distance: Int, mean: Float)?
        var runStart: Int?
        var runSum: Float = 0
        // One pass; index `levels.count` acts as a loud sentinel that closes the last run.
        for index in 0...levels.count {
            let silent = index < levels.count && isSilent(levels[index], at: index, taken: taken)
            if silent {
                if runStart == nil { runStart = index; runSum = 0 }
                runSum += max(levels[index], -200)
                continue
            }
            guard let start = runStart else { continue }
            runStart = nil
            let run = start..<index
            guard run.count >= minimumSilentFrames else { continue }
            let distance = Self.distance(from: reference, to: run)
            let mean = runSum / Float(run.count)
            if let current = best, current.distance < distance || (current.distance == distance && current.mean <= mean) {
                continue
            }
            best = (run, distance, mean)
        }
        guard let best else { return Choice(boundary: reference, silence: nil) }
        return Choice(boundary: best.run.lowerBound + best.run.count / 2, silence: best.run)
    }

    package func choose(levels: [Float], reference: Int, taken: Range<Int>? = nil) -> Choice {
        levels.withUnsafeBufferPointer { choose(levels: $0, reference: reference, taken: taken) }
    }

    /// `choose` over `count` frames, measuring only as much of them as the answer needs: outward
    /// from the reference, `step` frames a side at a time, until no frame still unmeasured can be
    /// part of a silence as near as the best one found. The answer is the one `choose` gives with
    /// every level measured (the tests check it against that); measuring is decoding, and a gap
    /// near the title is found after a second or two of the window's six.
    ///
    /// A side is done when its outermost measured frame is not silent (no run crosses it, so a run
    /// beyond starts further out) and the best silence so far is strictly nearer than that frame:
    /// a run beyond is then strictly further than it, and ties cannot go its way either.
    ///
    /// - Parameters:
    ///   - levels: `count` levels on return; only the measured ones mean anything.
    ///   - measure: fills `levels[range]` for a range next to what is measured (never overlapping
    ///     it); false when the frames cannot be measured, which ends the search with nil.
    package func chooseMeasuringOutward(
        count: Int, reference: Int, taken: Range<Int>? = nil, step: Int, levels: inout [Float],
        measure: (Range<Int>, inout [Float]) -> Bool
    ) -> Choice? {
        guard count > 0 else { return choose(levels: [], reference: reference, taken: taken) }
        levels = [Float](repeating: 0, count: count)
        let reference = min(max(reference, 0), count)
        let step = min(max(step, 1), count)
        var measured = reference..<reference
        var lower = max(0, reference - step)
        var upper = min(count, reference + step)
        while true {
            if lower < measured.lowerBound, !measure(lower..<measured.lowerBound, &levels) { return nil }
            if measured.upperBound < upper, !measure(measured.upperBound..<upper, &levels) { return nil }
            measured = lower..<upper
            let localTaken = taken.map { $0.clamped(to: measured) }.map { ($0.lowerBound - lower)..<($0.upperBound - lower) }
            let local = levels.withUnsafeBufferPointer { all in
                choose(levels: UnsafeBufferPointer(rebasing: all[measured]), reference: reference - lower, taken: localTaken)
            }
            let choice = Choice(boundary: local.boundary + lower, silence: local.silence.map { ($0.lowerBound + lower)..<($0.upperBound + lower) })
            let nearest = choice.silence.map { Self.distance(from: reference, to: $0) }
            func sideOpen(edge: Int, reach: Int) -> Bool {
                isSilent(levels[edge], at: edge, taken: taken) || nearest.map { $0 >= reach } ?? true
            }
            let growsDown = lower > 0 && sideOpen(edge: lower, reach: reference - lower)
            let growsUp = upper < count && sideOpen(edge: upper - 1, reach: upper - reference)
            guard growsDown || growsUp else { return choice }
            if growsDown { lower = max(0, lower - step) }
            if growsUp { upper = min(count, upper + step) }
        }
    }

    private func isSilent(_ level: Float, at index: Int, taken: Range<Int>?) -> Bool {
        level < silenceLevel && !(taken?.contains(index) ?? false)
    }

    private static func distance(from reference: Int, to run: Range<Int>) -> Int {
        reference < run.lowerBound ? run.lowerBound - reference
            : reference > run.upperBound ? reference - run.upperBound : 0
    }
}
