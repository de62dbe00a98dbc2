/// Each frame's spectrum in a few bands and its level, as `FrameLevelMeter.spectra` measures
/// them: what `SongEdgeFinder` and `SplitPointFinder` read.
package struct FrameSpectra: Sendable, Hashable {
    /// Bands per frame.
    package var bandCount: Int
    /// `bandCount` values per frame, frame after frame: each band's energy in dB.
    package var bands: [Float] = []
    /// Each frame's RMS level in dBFS, as `FrameLevelMeter.measure` gives it.
    package var levels: [Float] = []

    package init(bandCount: Int) {
        self.bandCount = bandCount
    }

    package var frameCount: Int { levels.count }

    package mutating func removeAll() {
        bands.removeAll(keepingCapacity: true)
        levels.removeAll(keepingCapacity: true)
    }
}

/// Finds where one song ends and the next begins in a stretch of audio without a silence: the
/// frame boundary where the sound changes at once and for good.
///
/// Pure: it reads band energies, never audio. For each boundary it compares the mean spectrum
/// of the frames just before with the frames just after, over a short span (a quarter second: an
/// abrupt change) and a long one (a second and a half: a lasting one). A hard cut changes both
/// at the same boundary; a note or a drum inside a song changes the short span only; a crossfade
/// changes the long span only, slowly, with no boundary where the short span jumps as much.
/// So the edge is the boundary where the lesser of the two is largest, taken only when the
/// change there is abrupt (the short span's change about as large as the long span's) and clearly
/// above the rest of the range. Anything else (a crossfade, a song that flows on) returns nil:
/// the caller keeps its own estimate.
package struct SongEdgeFinder: Sendable, Hashable {
    /// Frames on each side for the short and the long comparison.
    package var shortSpan: Int
    package var longSpan: Int

    /// The short span's change at the edge must be at least this share of the long span's.
    package static let abruptness: Float = 0.8
    /// The long span's change at the edge must be this many times its median over the range.
    package static let prominence: Float = 1.25

    package init(shortSpan: Int, longSpan: Int) {
        self.shortSpan = max(1, shortSpan)
        self.longSpan = max(self.shortSpan + 1, longSpan)
    }

    /// The spans for frames of `frameSeconds`.
    package init(frameSeconds: Double) {
        let seconds = max(frameSeconds, 1e-3)
        self.init(shortSpan: Int((0.25 / seconds).rounded()), longSpan: Int((Self.longSeconds / seconds).rounded()))
    }

    /// Seconds of audio the long comparison reads on each side of a boundary.
    package static let longSeconds = 1.5

    /// The edge among `candidates` (boundaries: `k` lies between frame `k - 1` and frame `k`),
    /// or nil when none is clear.
    package func edge(in spectra: FrameSpectra, candidates: ClosedRange<Int>) -> Int? {
        let count = spectra.frameCount
        let bandCount = spectra.bandCount
        guard count > 2, bandCount > 0, spectra.bands.count == count * bandCount else { return nil }
        let first = max(candidates.lowerBound, 1), last = min(candidates.upperBound, count - 1)
        guard first <= last else { return nil }
        let candidates = first...last
        // Prefix sums per band: any span's mean in O(bands).
        var prefix = [Double](repeating: 0, count: (count + 1) * bandCount)
        for frame in 0..<count {
            for band in 0..<bandCount {
                prefix[(frame + 1) * bandCount + band] = prefix[frame * bandCount + band]
                    + Double(spectra.bands[frame * bandCount + band])
            }
        }
        func change(at boundary: Int, span: Int) -> Float {
            let before = max(0, boundary - span), after = min(count, boundary + span)
            guard before < boundary, boundary < after else { return 0 }
            var sum = 0.0
            for band in 0..<bandCount {
                let left = (prefix[boundary * bandCount + band] - prefix[before * bandCount + band]) / Double(boundary - before)
                let right = (prefix[after * bandCount + band] - prefix[boundary * bandCount + band]) / Double(after - boundary)
                sum += (left - right) * (left - right)
            }
            return Float((sum / Double(bandCount)).squareRoot())
        }
        var best: (boundary: Int, score: Float, short: Float, long: Float)?
        var longChanges: [Float] = []
        longChanges.reserveCapacity(candidates.count)
        for boundary in candidates {
            let short = change(at: boundary, span: shortSpan)
            let long = change(at: boundary, span: longSpan)
            longChanges.append(long)
            let score = min(short, long)
            if best.map({ score > $0.score }) ?? true { best = (boundary, score, short, long) }
        }
        guard let best, best.long > 0 else { return nil }
        longChanges.sort()
        let median = longChanges[longChanges.count / 2]
        guard best.short >= Self.abruptness * best.long, best.long >= Self.prominence * median else { return nil }
        return best.boundary
    }
}
