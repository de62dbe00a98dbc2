/// Finds where one song gives way to the next in a window with no silence: a hard cut to the
/// frame, a crossfade near its middle, from the spectral bands of each frame (`FrameSpectrum`).
///
/// Pure: no audio, no decoder. `bands` holds `FrameSpectrum.bandCount` values (dB) per frame,
/// frame after frame; boundary `k` (0...frames) lies between frame `k - 1` and frame `k`.
///
/// The novelty of boundary `k` compares the frames on each side of it, band by band (each
/// frame's bands taken relative to their mean, so the shape of the spectrum counts and its level
/// does not): the
/// squared difference of the two sides' means over their spread (a two-sample t-statistic,
/// averaged over the bands). Two songs differ in where their energy lies for seconds on end;
/// within one song the frames on both sides share their spread, so a drum fill or a louder
/// bar scores low against its own variance. Long sides (`longSide`) find the change and place
/// a crossfade (its novelty peaks where each side holds one song's half of the fade); short
/// sides (`shortSide`) then place a hard cut to the frame.
///
/// A change must be clear to count: a peak (the highest within half a long side) with novelty at
/// least `minimumNovelty` and `contrast` times the window's median. Of several clear changes
/// nearly as strong as the strongest (`rivalShare`), the one nearest the reference wins
/// (a jingle between two songs has two; the title names one of them), as the nearest silence
/// does. No clear change (talk over music, a medley, one song through the whole window): nil,
/// and the cut stays at the reference.
package struct MusicChangeFinder: Sendable, Hashable {
    package var frameSeconds: Double
    /// Seconds of audio on each side of a boundary for finding the change and placing a fade.
    package var longSide = 3.0
    /// Seconds on each side for placing a hard cut.
    package var shortSide = 0.3
    /// A boundary nearer the window's edges than this has too little on one side to judge.
    package var minimumSide = 0.75
    package var minimumNovelty: Float = 1.2
    package var contrast: Float = 6
    /// The farthest from the reference a change is taken (seconds): titles come up to 5 s early or
    /// late; the window's audio beyond this is the sides' context only.
    package var maximumDistance = 5.5
    /// Peaks this share of the strongest or more compete on their distance to the reference.
    package var rivalShare: Float = 0.8
    /// The reference stays when its own novelty reaches this share of the chosen peak's.
    package var titleShare: Float = 0.5
    /// Frames either side of the change's long-side peak searched for its short-side peak.
    package var refineSeconds = 0.4
    /// A hard cut's short-side novelty reaches this share of its long-side novelty; a fade's stays below.
    package var cutShare: Float = 0.5

    package init(frameSeconds: Double) {
        self.frameSeconds = frameSeconds
    }

    package enum Kind: Sendable, Hashable {
        case cut
        case fade
    }

    package struct Change: Sendable, Hashable {
        package let boundary: Int
        package let kind: Kind
        /// The long-side novelty at the change.
        package let novelty: Float
    }

    package func choose(bands: [Float], reference: Int) -> Change? {
        bands.withUnsafeBufferPointer { choose(bands: $0, reference: reference) }
    }

    package func choose(bands: UnsafeBufferPointer<Float>, reference: Int) -> Change? {
        let width = FrameSpectrum.bandCount
        let count = bands.count / width
        guard frameSeconds > 0, frameSeconds.isFinite, count > 0 else { return nil }
        let frames = { (seconds: Double) in max(1, Int((seconds / frameSeconds).rounded())) }
        let long = frames(longSide), short = frames(shortSide), edge = frames(minimumSide)
        let refineReach = frames(refineSeconds)
        guard count >= 2 * edge + 1 else { return nil }
        let sums = PrefixSums(bands: bands, width: width, count: count)

        let candidates = edge...(count - edge)
        var novelty = [Float](repeating: 0, count: count + 1)
        for boundary in candidates { novelty[boundary] = sums.novelty(at: boundary, side: long, minimumSide: edge) }
        let median = Self.median(of: novelty[candidates])
        let threshold = max(minimumNovelty, contrast * median)

        // Clear peaks: at least the threshold, and the highest within half a long side.
        let reach = max(1, long / 2)
        var peaks: [(boundary: Int, novelty: Float)] = []
        for boundary in candidates where novelty[boundary] >= threshold {
            let around = max(candidates.lowerBound, boundary - reach)...min(candidates.upperBound, boundary + reach)
            if around.allSatisfy({ novelty[$0] < novelty[boundary] || ($0 >= boundary && novelty[$0] <= novelty[boundary]) }) {
                peaks.append((boundary, novelty[boundary]))
            }
        }
        // Of the clear peaks nearly as strong as the strongest, the one nearest the reference: a
        // weaker change nearer the title is a passage within the song more often than not.
        guard let strongest = peaks.map(\.novelty).max() else { return nil }
        let reference = min(max(reference, 0), count)
        var best: (boundary: Int, distance: Int, novelty: Float)?
        let farthest = frames(maximumDistance)
        for peak in peaks where peak.novelty >= rivalShare * strongest && abs(peak.boundary - reference) <= farthest {
            let distance = abs(peak.boundary - reference)
            if let current = best, current.distance < distance || (current.distance == distance && current.novelty >= peak.novelty) {
                continue
            }
            best = (peak.boundary, distance, peak.novelty)
        }
        guard let best else { return nil }
        // The title is evidence too: a reference within `refineSeconds` of a change half as
        // clear stays, rather than jump seconds to a stronger one.
        let aroundReference = max(0, reference - refineReach)...min(count, reference + refineReach)
        if best.distance > refineReach, let own = novelty[aroundReference].max(), own >= titleShare * best.novelty { return nil }

        // A hard cut: the short-side novelty peaks near the change, at a good share of the
        // long-side one, and places it to the frame. A fade keeps its long-side peak.
        let near = max(1, best.boundary - refineReach)...min(count - 1, best.boundary + refineReach)
        var sharpest = (boundary: best.boundary, novelty: Float(0))
        for boundary in near {
            let value = sums.novelty(at: boundary, side: short, minimumSide: short)
            if value > sharpest.novelty { sharpest = (boundary, value) }
        }
        if sharpest.novelty >= cutShare * best.novelty {
            return Change(boundary: sharpest.boundary, kind: .cut, novelty: best.novelty)
        }
        return Change(boundary: best.boundary, kind: .fade, novelty: best.novelty)
    }

    private static func median(of values: ArraySlice<Float>) -> Float {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    /// Running sums of each band and its square: any run of frames' mean and variance in O(bands).
    private struct PrefixSums {
        let width: Int
        let count: Int
        /// `sum[(i * width) + b]`: band `b` summed over frames `0..<i`.
        var sum: [Double]
        var squares: [Double]

        init(bands: UnsafeBufferPointer<Float>, width: Int, count: Int) {
            self.width = width
            self.count = count
            sum = [Double](repeating: 0, count: (count + 1) * width)
            squares = [Double](repeating: 0, count: (count + 1) * width)
            for frame in 0..<count {
                // The spectrum's shape, not its level: a song that goes quiet for a bar, or a
                // fade, changes every band alike; another song moves some against others.
                var level = 0.0
                for band in 0..<width { level += Double(bands[frame * width + band]) }
                level /= Double(width)
                for band in 0..<width {
                    let value = Double(bands[frame * width + band]) - level
                    sum[(frame + 1) * width + band] = sum[frame * width + band] + value
                    squares[(frame + 1) * width + band] = squares[frame * width + band] + value * value
                }
            }
        }

        /// The two sides' mean squared difference over their pooled spread, averaged over the
        /// bands. Each side holds up to `side` frames, fewer at the window's edges.
        func novelty(at boundary: Int, side: Int, minimumSide: Int) -> Float {
            let low = max(0, boundary - side), high = min(count, boundary + side)
            guard boundary - low >= minimumSide, high - boundary >= minimumSide else { return 0 }
            let left = Double(boundary - low), right = Double(high - boundary)
            var total = 0.0
            for band in 0..<width {
                let leftSum = sum[boundary * width + band] - sum[low * width + band]
                let rightSum = sum[high * width + band] - sum[boundary * width + band]
                let leftSquares = squares[boundary * width + band] - squares[low * width + band]
                let rightSquares = squares[high * width + band] - squares[boundary * width + band]
                let leftMean = leftSum / left, rightMean = rightSum / right
                let leftVariance = max(0, leftSquares / left - leftMean * leftMean)
                let rightVariance = max(0, rightSquares / right - rightMean * rightMean)
                let difference = leftMean - rightMean
                // 1 dB² of spread at least: two flat stretches a hair apart are not a change.
                total += difference * difference / (leftVariance + rightVariance + 1)
            }
            return Float(total / Double(width))
        }
    }
}
