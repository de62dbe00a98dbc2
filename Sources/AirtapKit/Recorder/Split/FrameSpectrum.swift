#if canImport(Glibc)
import Glibc  // cos, sin, log10
#endif

/// The spectral shape of each decoded frame, for `MusicChangeFinder`: the frame's energy in
/// `bandCount` bands (dB), taken from the samples the level meter already has in hand.
///
/// Mono, averaged down to about 11 kHz (a song's identity lies below 5 kHz: bass line, chords,
/// voice; the average folds what is above into the bands), Hann-windowed, one radix-2 FFT of
/// 64 to 512 points a frame. Written here rather than taken from FFTW or kissfft: it is one
/// short transform of a few hundred points, its tables belong to this value (FFTW's planner is
/// process-wide state that is not thread-safe, and the recorder measures on many queues), and
/// a C target and a Debian package for forty lines would cost more than they save.
package struct FrameSpectrum {
    package static let bandCount = 12
    /// Band edges in Hz: about a third of an octave apart above 300 Hz, wider below.
    static let bandEdges: [Double] = [50, 100, 200, 300, 450, 650, 900, 1250, 1700, 2300, 3000, 4000, 5500]
    /// The rate the samples are averaged down to, roughly.
    static let analysisRate = 11025.0
    /// A band's energy never reads below this (dB), so silence is a finite, flat floor.
    static let floorDecibels: Float = 0

    // The transform in use: set up by `start(sampleRate:channels:samplesPerFrame:)`.
    private var size = 0
    private var group = 1
    private var rate = 0
    private var channels = 0
    private var samplesPerFrame = 0
    private var bitReversed: [Int32] = []
    private var cosines: [Float] = []
    private var sines: [Float] = []
    private var window: [Float] = []
    /// FFT bins per band: `bins[band]` is the range of bins it sums.
    private var bins: [Range<Int>] = []

    // The frame being gathered.
    private var real: [Float] = []
    private var imaginary: [Float] = []
    private var slot = 0
    private var inGroup = 0
    private var sum: Int32 = 0

    package init() {}

    /// Gets ready for frames of `samplesPerFrame` samples (all channels together) at this rate;
    /// cheap when nothing changed since the last call.
    package mutating func start(sampleRate: Int, channels: Int, samplesPerFrame: Int) {
        let channels = max(channels, 1)
        guard sampleRate != rate || channels != self.channels || samplesPerFrame != self.samplesPerFrame else { return }
        rate = sampleRate
        self.channels = channels
        self.samplesPerFrame = samplesPerFrame
        let factor = max(1, Int((Double(max(sampleRate, 1)) / Self.analysisRate).rounded()))
        group = factor * channels
        let reduced = samplesPerFrame / group
        // The largest power of two the frame fills, within 64...512: a longer frame's tail is left out.
        var size = 64
        while size * 2 <= min(reduced, 512) { size *= 2 }
        self.size = size
        var bits = 0
        while 1 << bits < size { bits += 1 }
        bitReversed = (0..<size).map { index in
            var reversed = 0
            for bit in 0..<bits where index & (1 << bit) != 0 { reversed |= 1 << (bits - 1 - bit) }
            return Int32(reversed)
        }
        cosines = (0..<size / 2).map { Float(cos(-2 * Double.pi * Double($0) / Double(size))) }
        sines = (0..<size / 2).map { Float(sin(-2 * Double.pi * Double($0) / Double(size))) }
        window = (0..<size).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(size))) }
        let binHertz = Double(max(sampleRate, 1)) / Double(factor) / Double(size)
        bins = (0..<Self.bandCount).map { band in
            let low = min(max(Int((Self.bandEdges[band] / binHertz).rounded()), 1), size / 2)
            let high = min(max(Int((Self.bandEdges[band + 1] / binHertz).rounded()), low + 1), size / 2 + 1)
            return low..<max(low, high)
        }
        real = [Float](repeating: 0, count: size)
        imaginary = [Float](repeating: 0, count: size)
    }

    /// Adds `samples` (interleaved), which lie `offset` samples into their frame. The samples of
    /// one frame come in order; an offset of 0 starts a new frame.
    package mutating func add(_ samples: UnsafeBufferPointer<Int16>, offset: Int) {
        guard size > 0 else { return }
        if offset == 0 { slot = 0; inGroup = 0; sum = 0 }
        let group = group, size = size
        var slot = slot, inGroup = inGroup, sum = sum
        real.withUnsafeMutableBufferPointer { real in
            for sample in samples {
                guard slot < size else { break }
                sum &+= Int32(sample)
                inGroup += 1
                if inGroup == group {
                    real[slot] = Float(sum)
                    slot += 1
                    inGroup = 0
                    sum = 0
                }
            }
        }
        self.slot = slot
        self.inGroup = inGroup
        self.sum = sum
    }

    /// The bands of the frame gathered since the last offset 0, into `bands` (`bandCount` values).
    /// A frame that gave fewer samples than the transform holds is padded with zeros.
    package mutating func finishFrame(into bands: UnsafeMutableBufferPointer<Float>) {
        guard size > 0, bands.count >= Self.bandCount else { return }
        let size = size
        for index in slot..<size { real[index] = 0 }
        slot = size
        real.withUnsafeMutableBufferPointer { real in
            imaginary.withUnsafeMutableBufferPointer { imaginary in
                window.withUnsafeBufferPointer { window in
                    for index in 0..<size {
                        real[index] *= window[index]
                        imaginary[index] = 0
                    }
                }
                bitReversed.withUnsafeBufferPointer { reversed in
                    for index in 0..<size {
                        let other = Int(reversed[index])
                        if other > index { real.swapAt(index, other) }
                    }
                }
                cosines.withUnsafeBufferPointer { cosines in
                    sines.withUnsafeBufferPointer { sines in
                        var half = 1
                        while half < size {
                            let stride = size / (half * 2)
                            var start = 0
                            while start < size {
                                for offset in 0..<half {
                                    let c = cosines[offset * stride], s = sines[offset * stride]
                                    let a = start + offset, b = a + half
                                    let re = real[b] * c - imaginary[b] * s
                                    let im = real[b] * s + imaginary[b] * c
                                    real[b] = real[a] - re
                                    imaginary[b] = imaginary[a] - im
                                    real[a] += re
                                    imaginary[a] += im
                                }
                                start += half * 2
                            }
                            half *= 2
                        }
                    }
                }
                // Per bin, not per band sum: a band's level stays comparable whatever the transform's size.
                for (band, range) in bins.enumerated() {
                    var energy: Float = 0
                    for bin in range { energy += real[bin] * real[bin] + imaginary[bin] * imaginary[bin] }
                    let mean = range.isEmpty ? 0 : energy / Float(range.count) / Float(size)
                    bands[band] = max(10 * log10(max(mean, 1e-12)), Self.floorDecibels)
                }
            }
        }
    }
}
