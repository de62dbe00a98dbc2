#if canImport(Glibc)
import Glibc  // log10
#endif
import AirtapIngest
import AudioDecoding
import FoundationEssentials
import ICYWire

/// Measures each frame's level, for `SplitAligner`. A protocol so the aligner's bookkeeping is
/// tested with made-up levels, and the real one decodes.
package protocol FrameLevelMeter {
    /// Replaces `levels` with the RMS level (dBFS) of each of `frames`, in order. `priming` are
    /// the frames just before them: decoded only to settle the decoder (bit reservoir, filter
    /// bank), their levels are not reported. A meter may ignore them when `frames` directly
    /// follow (in the stream) the frames of an earlier call, whose decoder it kept and goes on
    /// with. Returns false when the frames cannot be measured.
    mutating func measure(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into levels: inout [Float]) -> Bool

    /// Lets go of what the calls kept (their decoders): the frames of the next call do not
    /// follow theirs.
    mutating func finish()

    /// Replaces `spectra` with the band energies and the level of each of `frames`, decoding
    /// `priming` first (not reported). Returns false when the frames cannot be measured so.
    mutating func spectra(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into spectra: inout FrameSpectra) -> Bool
}

extension FrameLevelMeter {
    /// A meter that keeps nothing between calls.
    package mutating func finish() {}

    /// A meter of levels only: the search finds silences, never an edge in the music.
    package mutating func spectra(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into spectra: inout FrameSpectra) -> Bool {
        false
    }
}

/// Decodes with the stream's decoder (`AudioDecoders`) and takes the RMS of every frame's
/// samples, all channels together.
///
/// At most two decoders for a search around a title change (one per side: a call whose frames
/// follow those of one of them goes on with it, any other resets the older), freed at
/// `finish()`: between windows the stream jumps
/// anyway (which is why each step is primed), and a station spends minutes between title
/// changes, so 500 stations should not keep 500 idle decoders (about 150 kB each, mostly
/// touched memory).
/// A codec with no decoder is not measured: its cuts stay at the title.
package struct DecodingLevelMeter: FrameLevelMeter {
    /// Sum of squared samples per frame: exact in integers (a frame's squares stay far below 2^63).
    private var sums: [Int64] = []
    private var counts: [Int] = []
    /// Frames decoded so far, priming included (the cost of the search).
    package private(set) var decodedFrames = 0

    /// The two decoders used last, least recently used first, while a call may go on with them:
    /// a search grows on both sides of the title, one decoder a side.
    private var runs: [Run] = []
    private static let keptRuns = 2

    /// One decoder's life: what it was fed and what it produced, for the frame arithmetic.
    private struct Run {
        let decoder: any AudioDecoder
        let codec: AudioCodec
        /// Samples per frame and rate as the headers give them (the first frame's).
        let headerSamplesPerFrame: Int
        let headerRate: Int
        /// Frames fed so far, priming included.
        var fed = 0
        /// Samples (all channels) produced so far.
        var produced = 0
        /// Stream position just past the last frame fed.
        var end: Int
    }

    package init() {}

    package mutating func measure(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into levels: inout [Float]) -> Bool {
        levels.removeAll(keepingCapacity: true)
        // Frames that follow a kept decoder's: it goes on, exactly as one decode of both would.
        if let first = frames.first, let index = runs.firstIndex(where: { $0.end == first.position }) {
            return decode(run: index, priming: [], frames: frames, into: &levels)
        }
        // Ogg needs no search (a link boundary is the exact cut) and its pages are not of one
        // length: the frame arithmetic below would not hold.
        guard let first = frames.first, first.sampleCount > 0, !first.header.codec.isChained else { return false }
        let codec = first.header.codec
        // The least recently used decoder makes way, and is reset for this step rather than
        // freed: creating a decoder (mpg123_new, FAAD2's tables) costs more than decoding a step.
        var reused: (any AudioDecoder)?
        if runs.count == Self.keptRuns {
            let evicted = runs.removeFirst()
            if evicted.codec == codec {
                evicted.decoder.reset()
                reused = evicted.decoder
            }
        }
        guard let decoder = reused ?? (try? AudioDecoders.make(for: codec)) else { return false }
        runs.append(Run(decoder: decoder, codec: codec, headerSamplesPerFrame: first.sampleCount,
                        headerRate: max(first.header.sampleRate, 1), end: first.position))
        return decode(run: runs.count - 1, priming: priming, frames: frames, into: &levels)
    }

    package mutating func finish() {
        runs.removeAll()
    }

    /// One decode of `priming` and `frames` with a decoder of its own: per frame the mono mix of
    /// its first `BandSpectrum.size` samples through `BandSpectrum`, and its level as `measure`
    /// gives it.
    package mutating func spectra(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into spectra: inout FrameSpectra) -> Bool {
        spectra.removeAll()
        spectra.bandCount = BandSpectrum.bandCount
        guard let first = frames.first, first.sampleCount > 0, !first.header.codec.isChained,
              let decoder = try? AudioDecoders.make(for: first.header.codec) else { return false }
        let headerSamplesPerFrame = first.sampleCount
        let headerRate = max(first.header.sampleRate, 1)
        let blockSize = BandSpectrum.size
        var mono = [Float](repeating: 0, count: frames.count * blockSize)
        clearSums(frames: frames.count)
        let skipped = priming.count
        var produced = 0
        var sampleRate = headerRate
        var failed = false
        sums.withUnsafeMutableBufferPointer { sums in
            counts.withUnsafeMutableBufferPointer { counts in
                mono.withUnsafeMutableBufferPointer { mono in
                    func feed(_ packet: Packet) {
                        do {
                            // The frame arithmetic of `decode(run:...)`: the n-th sample out
                            // belongs to frame n / samplesPerFrame of what was fed.
                            try decoder.decode(packet.bytes) { format, samples in
                                sampleRate = format.sampleRate
                                let channels = max(format.channels, 1)
                                let stride = max(headerSamplesPerFrame * format.sampleRate / headerRate, 1) * channels
                                let scale = 1 / (32768 * Float(channels))
                                // Where `produced` falls, divided once per call: then frame, slot
                                // and channel are counted along, not divided out per sample.
                                var frame = produced / stride - skipped
                                var slot = (produced % stride) / channels
                                var channel = (produced % stride) % channels
                                let slotsPerFrame = stride / channels
                                for sample in samples {
                                    if frame >= 0, frame < sums.count {
                                        sums[frame] &+= Int64(sample) &* Int64(sample)
                                        counts[frame] += 1
                                        if slot < blockSize { mono[frame * blockSize + slot] += Float(sample) * scale }
                                    }
                                    channel += 1
                                    if channel == channels {
                                        channel = 0
                                        slot += 1
                                        if slot == slotsPerFrame {
                                            slot = 0
                                            frame += 1
                                        }
                                    }
                                }
                                produced += samples.count
                            }
                        } catch {
                            failed = true
                        }
                    }
                    for packet in priming where !failed { feed(packet) }
                    for packet in frames where !failed { feed(packet) }
                }
            }
        }
        decodedFrames += priming.count + frames.count
        guard !failed else { return false }
        var analyzer = BandSpectrum(sampleRate: sampleRate)
        spectra.bands.reserveCapacity(frames.count * BandSpectrum.bandCount)
        mono.withUnsafeBufferPointer { mono in
            for frame in 0..<frames.count {
                analyzer.append(UnsafeBufferPointer(rebasing: mono[(frame * blockSize)..<((frame + 1) * blockSize)]), to: &spectra.bands)
                spectra.levels.append(Self.level(sum: sums[frame], count: counts[frame]))
            }
        }
        return true
    }

    /// Feeds `priming` and `frames` to `runs[index]`'s decoder and puts the levels of `frames`
    /// in `levels`. A failed decode ends the run.
    private mutating func decode(run index: Int, priming: ArraySlice<Packet>, frames: ArraySlice<Packet>,
                                 into levels: inout [Float]) -> Bool {
        var run = runs[index]
        clearSums(frames: frames.count)

        // A decoder returns a frame's samples once it has the frame (mpg123's very first frame of a
        // decoder's life waits for the next header; FAAD2 holds every frame back by one, and its
        // adapter hands out silence for the first), in order; so the n-th sample out belongs to
        // frame n / samplesPerFrame of what the run was fed, counted from its first frame. Samples
        // per frame at the decoder's output rate, not the header's: HE-AAC (and FAAD2's implicit
        // SBR for LC at 24 kHz or less) doubles both.
        let skipped = run.fed + priming.count
        let decoder = run.decoder
        let headerSamplesPerFrame = run.headerSamplesPerFrame
        let headerRate = run.headerRate
        var produced = run.produced
        var failed = false
        sums.withUnsafeMutableBufferPointer { sums in
            counts.withUnsafeMutableBufferPointer { counts in
                func feed(_ packet: Packet) {
                    packet.bytes.withUnsafeBytes { bytes in
                        do {
                            try decoder.decode(bytes) { format, samples in
                                let samplesPerFrame = headerSamplesPerFrame * format.sampleRate / headerRate
                                let stride = max(samplesPerFrame, 1) * max(format.channels, 1)
                                produced = Self.addSquares(of: samples, from: produced, stride: stride, skipped: skipped,
                                                           sums: sums, counts: counts)
                            }
                        } catch {
                            // The decoder could not resync: the window is not measurable, not fatal.
                            failed = true
                        }
                    }
                }
                for packet in priming where !failed { feed(packet) }
                for packet in frames where !failed { feed(packet) }
            }
        }
        decodedFrames += priming.count + frames.count
        run.fed += priming.count + frames.count
        run.produced = produced
        run.end = frames.last.map { $0.byteRange.upperBound } ?? run.end
        runs.remove(at: index)
        guard !failed else { return false }
        runs.append(run)
        for index in 0..<frames.count { levels.append(Self.level(sum: sums[index], count: counts[index])) }
        return true
    }

    private mutating func clearSums(frames: Int) {
        sums.removeAll(keepingCapacity: true)
        counts.removeAll(keepingCapacity: true)
        sums.append(contentsOf: repeatElement(0, count: frames))
        counts.append(contentsOf: repeatElement(0, count: frames))
    }

    /// A frame's level in dBFS from its sum of squares; 0 for a frame that produced nothing
    /// (held back or broken), which is no evidence of silence.
    static func level(sum: Int64, count: Int) -> Float {
        guard count > 0 else { return 0 }
        let rms = (Double(sum) / Double(count)).squareRoot() / 32768
        return rms > 0 ? Float(max(20 * log10(rms), -200)) : -200
    }

    /// Adds the squares of `samples` (output positions from `position` on) to their frames'
    /// sums, one frame's run of samples at a time: the frame index once per run, not a division
    /// per sample (this loop was the largest single cost of recording 1000 stations). Returns
    /// the position after them.
    @inline(__always)
    static func addSquares(of samples: UnsafeBufferPointer<Int16>, from position: Int, stride: Int, skipped: Int,
                           sums: UnsafeMutableBufferPointer<Int64>, counts: UnsafeMutableBufferPointer<Int>) -> Int {
        var next = 0
        var position = position
        while next < samples.count {
            let frame = position / stride - skipped
            let run = min(stride - position % stride, samples.count - next)
            if frame >= 0, frame < sums.count {
                var sum: Int64 = 0
                for index in next..<(next + run) {
                    let sample = Int64(samples[index])
                    sum &+= sample &* sample
                }
                sums[frame] &+= sum
                counts[frame] += run
            }
            next += run
            position += run
        }
        return position
    }
}
