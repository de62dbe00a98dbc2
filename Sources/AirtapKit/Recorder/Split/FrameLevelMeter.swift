#if canImport(Glibc)
import Glibc  // log10
#endif
import FoundationEssentials
import ICYWire
import AudioDecoding

/// Measures each frame's level, for `SplitAligner`. A protocol so the aligner's bookkeeping is
/// tested with made-up levels, and the real one decodes.
package protocol FrameLevelMeter {
    /// Replaces `levels` with the RMS level (dBFS) of each of `frames`, in order. `priming` are
    /// the frames just before them: decoded only to settle the decoder (bit reservoir, filter
    /// bank), their levels are not reported. Returns false when the frames cannot be measured.
    mutating func measure(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into levels: inout [Float]) -> Bool
}

/// Decodes with the stream's decoder (`AudioDecoders`) and takes the RMS of every frame's
/// samples, all channels together.
///
/// A fresh decoder for each window around a title change, freed after it: between windows the
/// stream jumps anyway (which is why each window is primed), and a station spends minutes
/// between title changes, so 500 stations should not keep 500 idle decoders (about 150 kB each,
/// mostly touched memory). Creating one costs microseconds, once per song.
/// A codec with no decoder is not measured: its cuts stay at the title.
package struct DecodingLevelMeter: FrameLevelMeter {
    /// Sum of squared samples per frame: exact in integers (a frame's squares stay far below 2^63).
    private var sums: [Int64] = []
    private var counts: [Int] = []
    /// Frames decoded so far, priming included (the cost of the search).
    package private(set) var decodedFrames = 0

    package init() {}

    package mutating func measure(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into levels: inout [Float]) -> Bool {
        levels.removeAll(keepingCapacity: true)
        // Ogg needs no search (a link boundary is the exact cut) and its pages are not of one
        // length: the frame arithmetic below would not hold.
        guard let first = frames.first, first.sampleCount > 0, !first.header.codec.isOgg,
              let decoder = try? AudioDecoders.make(for: first.header.codec) else { return false }
        sums.removeAll(keepingCapacity: true)
        counts.removeAll(keepingCapacity: true)
        sums.append(contentsOf: repeatElement(0, count: frames.count))
        counts.append(contentsOf: repeatElement(0, count: frames.count))

        // A decoder returns a frame's samples once it has the frame (mpg123's very first frame of a
        // decoder's life waits for the next header; FAAD2 holds every frame back by one), in order;
        // so the n-th sample out belongs to frame n / samplesPerFrame of what was fed, counted from
        // the first priming frame. Samples per frame at the decoder's output rate, not the
        // header's: HE-AAC (and FAAD2's implicit SBR for LC at 24 kHz or less) doubles both.
        let headerSamplesPerFrame = first.sampleCount
        let headerRate = max(first.header.sampleRate, 1)
        let skipped = priming.count
        var produced = 0
        var failed = false
        sums.withUnsafeMutableBufferPointer { sums in
            counts.withUnsafeMutableBufferPointer { counts in
                func feed(_ packet: Packet) {
                    packet.bytes.withUnsafeBytes { bytes in
                        do {
                            try decoder.decode(bytes) { format, samples in
                                let samplesPerFrame = headerSamplesPerFrame * format.sampleRate / headerRate
                                let stride = max(samplesPerFrame, 1) * max(format.channels, 1)
                                // One frame's run of samples at a time: the frame index once per
                                // run, not a division per sample. (This loop was the largest
                                // single cost of recording 1000 stations.)
                                var next = 0
                                var position = produced
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
                                produced = position
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
        guard !failed else { return false }
        for index in 0..<frames.count {
            // A frame that produced nothing (held back or broken) is not evidence of silence.
            guard counts[index] > 0 else { levels.append(0); continue }
            let rms = (Double(sums[index]) / Double(counts[index])).squareRoot() / 32768
            levels.append(rms > 0 ? Float(max(20 * log10(rms), -200)) : -200)
        }
        return true
    }
}
