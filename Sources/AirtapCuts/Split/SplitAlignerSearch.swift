import AirtapIngest
import ICYWire

/// The search in a gathered window: a silence, else (with a delay) an edge in the music, else
/// the title's or the corrected place; and what the boundaries found teach the learner.
extension SplitAlignerCore {
    /// The search in the gathered window, as `search` says; nil when it cannot be measured.
    /// `title`: the boundary where the title arrived.
    mutating func searchWindow(_ search: CutWindow, reference: Int, title: Int, frameSeconds: Double,
                               arrival: Double) -> (boundary: Int, reason: CutPlacement.Reason)? {
        let finder = SplitPointFinder(options: options, frameSeconds: frameSeconds)
        // Frames of the window inside the silence the previous change used (CBR or not, the
        // frames of one window share a duration: no format change inside it).
        var taken: Range<Int>?
        if let used = usedSilence {
            let from = max(0, Int(((used.lowerBound - windowStart) / frameSeconds).rounded(.down)))
            let to = min(windowFrames.count, Int(((used.upperBound - windowStart) / frameSeconds).rounded(.up)))
            if from < to { taken = from..<to }
        }
        // The frames a cut may land at.
        let cutFrom = min(max(Int(((arrival + search.cutFrom - windowStart) / frameSeconds).rounded()), 0), windowFrames.count)
        let cutTo = min(max(Int(((arrival + search.cutTo - windowStart) / frameSeconds).rounded()), cutFrom), windowFrames.count)
        // The silence nearest the reference: outward from it, decoding only as far as a nearer
        // silence could lie (cheap where there is a gap near, the common case). With a delay on a
        // station whose last corrected search found no silence, the whole window at once instead,
        // levels and spectra in one decode: the edge search needs all of it anyway.
        let corrected = if case .corrected = search.mode { true } else { false }
        var measuredWhole = false
        let silenceChoice: SplitPointFinder.Choice
        if corrected, !lastCorrectedFoundSilence, measureWhole() {
            measuredWhole = true
            silenceChoice = spectra.levels.withUnsafeBufferPointer { finder.choose(levels: $0, reference: reference, taken: taken) }
        } else {
            let step = Int(min((Self.searchStepSeconds / frameSeconds).rounded(.up), Double(windowFrames.count)))
            guard let found = measureOutward(finder: finder, reference: reference, taken: taken, step: step) else { return nil }
            silenceChoice = found
        }
        if let silence = silenceChoice.silence,
           let cut = cut(in: silence, choice: silenceChoice, finder: finder, frameSeconds: frameSeconds, arrival: arrival) {
            if corrected { lastCorrectedFoundSilence = true }
            return (cut, .silence)
        }
        guard corrected else { return (reference, .title) }
        // The silence just found let the delay go (it disagreed): this title is cut as without one.
        if case .aroundTitle = self.search.mode { return (title, .title) }
        lastCorrectedFoundSilence = false
        // No silence: where the music changes at once.
        let edges = SongEdgeFinder(frameSeconds: frameSeconds)
        if measuredWhole || measureWhole(), let edge = edges.edge(in: spectra, candidates: cutFrom...cutTo) {
            return (edge, .edge)
        }
        return (reference, .delay)
    }

    /// Where a silence found in the window is cut, if anywhere; it teaches the learner either way.
    /// With a delay, a silence where the song changed is cut in at its middle. Around the title
    /// (the only place without a delay; with one, the place for a title that came far off it),
    /// as much of the silence as lies in the user's window, if that is long enough to be a gap:
    /// a silence beyond it only taught the learner.
    private mutating func cut(in silence: Range<Int>, choice: SplitPointFinder.Choice, finder: SplitPointFinder,
                              frameSeconds: Double, arrival: Double) -> Int? {
        // A silence cut off by the window's edge has no known middle to learn from.
        if silence.lowerBound > 0, silence.upperBound < windowFrames.count {
            let middle = windowStart + Double(silence.lowerBound + silence.upperBound) / 2 * frameSeconds
            learn(from: arrival - middle)
        }
        let titleFrom = Int(((arrival - options.windowBefore - windowStart) / frameSeconds).rounded())
        let titleTo = Int(((arrival + options.windowAfter - windowStart) / frameSeconds).rounded())
        let inWindow = max(silence.lowerBound, titleFrom)..<max(min(silence.upperBound, titleTo), max(silence.lowerBound, titleFrom))
        // The delay as it stands now (`learn` may just have set it): the silence that made it
        // consistent is cut in by it too.
        var delaySpan: Range<Int>?
        if case .corrected = search.mode {
            let from = Int(((arrival + search.cutFrom - windowStart) / frameSeconds).rounded())
            delaySpan = from..<max(from, Int(((arrival + search.cutTo - windowStart) / frameSeconds).rounded()))
        }
        let cut: Int
        if let delaySpan, silence.upperBound >= delaySpan.lowerBound, silence.lowerBound <= delaySpan.upperBound {
            cut = choice.boundary
        } else if inWindow.count >= finder.minimumSilentFrames {
            cut = inWindow.lowerBound + inWindow.count / 2
        } else {
            return nil
        }
        statistics.inSilence += 1
        usedSilence = (windowStart + Double(silence.lowerBound) * frameSeconds) ..< (windowStart + Double(silence.upperBound) * frameSeconds)
        return cut
    }

    /// Decodes the whole window at once, with its priming, for its spectra. False when the
    /// meter cannot (a meter of levels only, a codec without a decoder).
    mutating func measureWhole() -> Bool {
        let primer = priming(before: 0)
        statistics.measuredFrames += primer.count + windowFrames.count
        spectra = FrameSpectra(bandCount: BandSpectrum.bandCount)
        return meter.spectra(priming: primer[...], frames: windowFrames[...], into: &spectra)
    }

    /// One boundary the audio showed: the learner takes it, the journal keeps it (`keepLearned`),
    /// and the next search follows the delay in use.
    mutating func learn(from sample: Double) {
        guard options.learnsTitleDelay else { return }
        learner.observe(sample)
        let delay = CutWindow.delay(options: options, learned: learner.estimate)
        keepLearned()
        statistics.titleDelay = delay
        search = CutWindow(options: options, delay: delay)
    }

    /// The search, decoding a step a side at a time from the reference (`SplitPointFinder.
    /// chooseMeasuringOutward`). Each step comes with the frames that prime a decoder for it:
    /// the window's own just before it, then those before the window. The meter goes on with
    /// the decoder of the step before instead, when there is one (the upward side).
    mutating func measureOutward(finder: SplitPointFinder, reference: Int, taken: Range<Int>?,
                                         step: Int) -> SplitPointFinder.Choice? {
        var meter = self.meter
        var measuredFrames = 0
        var segment: [Float] = []
        var levels: [Float] = []
        defer {
            meter.finish()
            self.meter = meter
            statistics.measuredFrames += measuredFrames
        }
        return finder.chooseMeasuringOutward(count: windowFrames.count, reference: reference, taken: taken,
                                             step: step, levels: &levels) { range, levels in
            let primer = priming(before: range.lowerBound)
            // Unprimed (the window starts the stream), a step also gets the frame after it:
            // mpg123 hands out the first frame of a decoder's life only once the next frame's
            // header has arrived, so a step of one frame would read as loud, where a decode of
            // the whole window measures it.
            let fed = primer.isEmpty ? range.lowerBound..<min(range.upperBound + 1, windowFrames.count) : range
            measuredFrames += primer.count + fed.count
            guard meter.measure(priming: primer[...], frames: windowFrames[fed], into: &segment),
                  segment.count == fed.count else { return false }
            levels.replaceSubrange(range, with: segment[..<range.count])
            return true
        }
    }

    /// The frames that prime a decoder for `windowFrames[start...]`, oldest first: as many as
    /// `gatherPriming` takes, from the window before `start` and then from before the window.
    func priming(before start: Int) -> [Packet] {
        if start == 0 { return primingFrames }
        var frames: [Packet] = []
        var bytes = 0
        var index = start - 1
        while index >= -primingFrames.count, frames.count < Self.primingFrames.maximum,
              frames.count < Self.primingFrames.minimum || bytes < Self.primingBytes {
            let packet = index >= 0 ? windowFrames[index] : primingFrames[primingFrames.count + index]
            frames.append(packet)
            bytes += packet.bytes.count
            index -= 1
        }
        return frames.reversed()
    }
}
