import Glibc  // log

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
/// Pure: it reads band energies, never audio. For each boundary it compares the frames just
/// before with the frames just after over three spans: a quarter second (an abrupt change), half
/// a second and a second and a half (a lasting one). Each comparison is each band's difference of
/// means over the band's spread on the two sides (a t statistic, softened by a square root): a
/// song whose sound moves a lot inside itself must change more to count, a steady one less. A
/// hard cut changes every span at the same boundary; a note or a drum inside a song changes the
/// short spans only; a crossfade changes the long span only, slowly, with no boundary where the
/// short span jumps as much. So the edge is the boundary where the lesser of the half-second and
/// the long change is largest (the half second places it: a quarter second is too short to tell
/// the cut from the next song's first beat), among the boundaries where the change is abrupt (the
/// quarter second's change about as large as the long span's), taken only when it is clearly
/// above the rest of the range, the sound a long span away on one side of it is steady (or the
/// change is far above the rest), and the long change peaks there. Anything else (a crossfade,
/// an abrupt sound inside one, a song that flows on) returns nil: the caller keeps its own
/// estimate. The edge found is then placed to the frame: a swell or a break in the old song's
/// last bar can change the half second more than the cut a few frames on does, so within 0.15 s
/// the edge goes where the frames stop sounding like the song before it (its bands'
/// means and spreads over a long span) and start sounding like the song after, when that split is
/// clearly likelier than the edge's own.
///
/// `tools/music-set/edge-trials 400` with seeds 11 and 3 (200 hard cuts, 400 crossfades and 200
/// stretches of one song, between random places of real songs, the span's centre off by up to
/// 0.7 s): 84 % of hard cuts within 0.1 s (85 % without the peak check, 88 % without it and the
/// steadiness check); 93 % of crossfades cut inside their middle half (87 % and 79 % without,
/// 100 % at the centre alone); one song's cut moved more than 0.3 s in 36 of 200 (42 and 121).
/// Over six seeds (600 hard cuts), placing the edge to the frame takes hard cuts within 0.1 s
/// from 506 to 512 and costs 2 of 1,200 crossfades.
struct SongEdgeFinder: Sendable, Hashable {
    /// Frames on each side for the short, the middle and the long comparison.
    package var shortSpan: Int
    package var middleSpan: Int
    package var longSpan: Int
    /// Frames on each side of the edge found where `placed` may move it.
    package var placingSpan: Int

    /// The short span's change at the edge must be at least this share of the long span's.
    package static let abruptness: Float = 0.8
    /// The long span's change at the edge must be this many times its median over the range.
    package static let prominence: Float = 1.25
    /// The steadier side's long change a long span away, at most this share of the edge's ...
    package static let steadiness: Float = 0.4
    /// ... unless the edge's long change is this many times the range's median.
    package static let standout: Float = 1.8
    /// The edge's long change, at least this share of the largest a long span either side.
    package static let peakShare: Float = 0.9

    package init(shortSpan: Int, middleSpan: Int, longSpan: Int, placingSpan: Int) {
        self.shortSpan = max(1, shortSpan)
        self.middleSpan = max(self.shortSpan, middleSpan)
        self.longSpan = max(self.middleSpan + 1, longSpan)
        self.placingSpan = max(0, placingSpan)
    }

    /// The spans for frames of `frameSeconds`.
    package init(frameSeconds: Double) {
        let seconds = max(frameSeconds, 1e-3)
        self.init(shortSpan: Int((0.25 / seconds).rounded()), middleSpan: Int((0.5 / seconds).rounded()),
                  longSpan: Int((Self.longSeconds / seconds).rounded()), placingSpan: Int((0.15 / seconds).rounded()))
    }

    /// A band's variance (dB squared) taken as at least this: a band flat on both sides (digital
    /// silence in it) must not make any difference of means infinite.
    static let leastSpread = 1.0

    /// Seconds of audio the long comparison reads on each side of a boundary.
    package static let longSeconds = 1.5

    /// The edge among `candidates` (boundaries: `k` lies between frame `k - 1` and frame `k`),
    /// or nil when none is clear.
    package func edge(in spectra: FrameSpectra, candidates: ClosedRange<Int>) -> Int? {
        guard let changes = SpectrumChanges(spectra) else { return nil }
        let count = spectra.frameCount
        let first = max(candidates.lowerBound, 1), last = min(candidates.upperBound, count - 1)
        guard first <= last else { return nil }
        func change(at boundary: Int, span: Int) -> Float { changes.change(at: boundary, span: span) }
        var best: (boundary: Int, score: Float, long: Float)?
        // Only abrupt changes compete: a slow one next to the cut (the old song's last bar
        // going quiet) may score as high but is no edge.
        for boundary in first...last {
            let short = change(at: boundary, span: shortSpan)
            let long = change(at: boundary, span: longSpan)
            guard long > 0, short >= Self.abruptness * long else { continue }
            let score = min(change(at: boundary, span: middleSpan), long)
            if best.map({ score > $0.score }) ?? true { best = (boundary, score, long) }
        }
        guard let best else { return nil }
        // "The rest of the range" reaches half a long span beyond the candidates: a narrow range
        // lies mostly on the plateau a cut's long change makes around it, which would hide it.
        let reach = longSpan / 2
        var longChanges = (max(1, first - reach)...min(count - 1, last + reach)).map { change(at: $0, span: longSpan) }
        longChanges.sort()
        let median = longChanges[longChanges.count / 2]
        guard best.long >= Self.prominence * median else { return nil }
        // A hard cut joins two songs that each go on as they were: a long span further on either
        // side changes little. An abrupt sound inside a crossfade (the new song's first beat)
        // has the fade's own change on both sides; cut there, the fade's middle would be lost,
        // while the caller's estimate lies inside it. A change far above the rest is an edge
        // whatever its sides do.
        let before = max(1, best.boundary - longSpan), after = min(count - 1, best.boundary + longSpan)
        let steadiest = min(change(at: before, span: longSpan), change(at: after, span: longSpan))
        guard steadiest <= Self.steadiness * best.long || best.long >= Self.standout * median else { return nil }
        // A hard cut's long change peaks at the cut: the two songs are wholly on either side
        // only there. Near a crossfade's start or end the long change still grows towards the
        // fade's middle, so an abrupt sound there is no edge.
        let peak = (before...after).reduce(Float(0)) { max($0, change(at: $1, span: longSpan)) }
        guard best.long >= Self.peakShare * peak else { return nil }
        return placed(best.boundary, in: spectra, within: first...last)
    }

    /// The boundary within `placingSpan` frames of `edge` (and within `candidates`) that splits
    /// the frames between into the likeliest "before" and "after": each frame scored by how much
    /// likelier it is under the song before (each band a normal with the mean and spread of the
    /// `longSpan` frames before the span) than under the song after (the frames after it). The
    /// best split moves the edge only when the frames it hands to the other song are, together,
    /// clearly likelier there (by `placingMargin` in log likelihood): a few odd frames of a song
    /// that moves a lot must not. `edge` too when either side has too few frames to stand for its
    /// song.
    func placed(_ edge: Int, in spectra: FrameSpectra, within candidates: ClosedRange<Int>) -> Int {
        let count = spectra.frameCount, bands = spectra.bandCount
        let from = max(candidates.lowerBound, edge - placingSpan), to = min(candidates.upperBound, edge + placingSpan)
        let before = max(0, from - longSpan)..<from, after = to..<min(count, to + longSpan)
        guard from < to, before.count >= shortSpan, after.count >= shortSpan else { return edge }
        let songBefore = BandModel(spectra, frames: before), songAfter = BandModel(spectra, frames: after)
        // Boundary `from + k` puts frames from..<from+k before it: the split's log likelihood is
        // 2 * (the first k frames' sum) - (the whole sum), so the largest prefix sum wins, and
        // the frames between two boundaries favour the later one by the difference of theirs.
        var sum: Float = 0, best = (boundary: from, sum: Float(0)), atEdge: Float = 0
        for frame in from..<to {
            let values = spectra.bands[(frame * bands)..<((frame + 1) * bands)]
            sum += songBefore.logLikelihood(values) - songAfter.logLikelihood(values)
            if sum > best.sum { best = (frame + 1, sum) }
            if frame + 1 == edge { atEdge = sum }
        }
        return best.sum - atEdge >= Self.placingMargin ? best.boundary : edge
    }

    /// How much likelier (log likelihood, summed over the bands) the frames a move hands to the
    /// other song must be there. In `tools/music-set/edge-trials` (seeds 11, 3, 13 and 17) margins
    /// of 0, 4 and 5 place 336 of 400 hard cuts right, 8 places 335; this one keeps a hard cut of
    /// the station programme's AAC, already right, from moving 0.14 s on a margin of 3.4 (the moves
    /// that mend a cut there have 10-22).
    static let placingMargin: Float = 5
}

/// A song's sound as each band's mean and variance over some frames: what `SongEdgeFinder.placed`
/// scores a frame against.
private struct BandModel {
    var means: [Float]
    var variances: [Float]
    var logVarianceSum: Float

    init(_ spectra: FrameSpectra, frames: Range<Int>) {
        let bands = spectra.bandCount, count = Float(frames.count)
        means = [Float](repeating: 0, count: bands)
        variances = [Float](repeating: 0, count: bands)
        for frame in frames {
            for band in 0..<bands { means[band] += spectra.bands[frame * bands + band] }
        }
        for band in 0..<bands { means[band] /= count }
        for frame in frames {
            for band in 0..<bands {
                let deviation = spectra.bands[frame * bands + band] - means[band]
                variances[band] += deviation * deviation
            }
        }
        for band in 0..<bands { variances[band] = max(variances[band] / count, Float(SongEdgeFinder.leastSpread)) }
        logVarianceSum = variances.reduce(0) { $0 + log($1) }
    }

    /// The frame's log likelihood under the bands' normals, less the constant every model shares.
    func logLikelihood(_ values: ArraySlice<Float>) -> Float {
        var sum: Float = 0
        for (band, value) in zip(variances.indices, values) {
            let deviation = value - means[band]
            sum += deviation * deviation / variances[band]
        }
        return -0.5 * (sum + logVarianceSum)
    }
}

/// How much a stretch of spectra changes at a boundary over a span on each side: each band's
/// difference of means over the band's spread on the two sides (a t statistic, softened by a
/// square root), averaged over the bands. Prefix sums of values and of squares give any span's
/// mean and spread in O(bands).
private struct SpectrumChanges {
    let count: Int
    let bandCount: Int
    private var sums: [Double]
    private var squares: [Double]

    /// Nil for spectra with too few frames to compare or bands that do not add up.
    init?(_ spectra: FrameSpectra) {
        count = spectra.frameCount
        bandCount = spectra.bandCount
        guard count > 2, bandCount > 0, spectra.bands.count == count * bandCount else { return nil }
        sums = [Double](repeating: 0, count: (count + 1) * bandCount)
        squares = [Double](repeating: 0, count: (count + 1) * bandCount)
        for frame in 0..<count {
            for band in 0..<bandCount {
                let value = Double(spectra.bands[frame * bandCount + band])
                sums[(frame + 1) * bandCount + band] = sums[frame * bandCount + band] + value
                squares[(frame + 1) * bandCount + band] = squares[frame * bandCount + band] + value * value
            }
        }
    }

    /// The change at `boundary` (between frame `boundary - 1` and frame `boundary`) over `span`
    /// frames each side, as many as there are; 0 with none on a side.
    func change(at boundary: Int, span: Int) -> Float {
        let before = max(0, boundary - span), after = min(count, boundary + span)
        guard before < boundary, boundary < after else { return 0 }
        let leftCount = Double(boundary - before), rightCount = Double(after - boundary)
        var sum = 0.0
        for band in 0..<bandCount {
            let at = boundary * bandCount + band, from = before * bandCount + band, to = after * bandCount + band
            let left = (sums[at] - sums[from]) / leftCount
            let right = (sums[to] - sums[at]) / rightCount
            let leftSpread = (squares[at] - squares[from]) / leftCount - left * left
            let rightSpread = (squares[to] - squares[at]) / rightCount - right * right
            let spread = max((leftSpread + rightSpread) / 2, SongEdgeFinder.leastSpread).squareRoot()
            sum += (left - right) * (left - right) / spread
        }
        return Float((sum / Double(bandCount)).squareRoot())
    }
}
