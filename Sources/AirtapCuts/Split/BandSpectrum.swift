#if canImport(Glibc)
import Glibc  // cos, sin, log10, pow
#endif

/// The energy of a block of samples in a few bands spaced evenly in pitch (log frequency), in dB
/// relative to their mean: the spectrum's shape, which `SongEdgeFinder` compares. A Hann window and a radix-2 FFT of `size` samples.
///
/// Written here rather than taken from a library: no FFT package is in the mirror (and
/// Accelerate is Apple's only), and the split search needs one small transform per frame.
struct BandSpectrum {
    static let size = 1024
    static let bandCount = 16
    /// The lowest band's lower edge, and the highest band's upper edge where the rate allows.
    static let lowestHertz = 60.0
    static let highestHertz = 16_000.0

    /// What every transform of `size` samples shares, whatever the rate: computed once per
    /// process, not once per search window (a window is a few hundred frames; the tables cost
    /// as much as a dozen transforms).
    private struct Tables {
        let window: [Float]
        let cosines: [Float]
        let sines: [Float]
        let reversed: [Int]

        init() {
            let size = BandSpectrum.size
            window = (0..<size).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(size))) }
            cosines = (0..<(size / 2)).map { Float(cos(2 * Double.pi * Double($0) / Double(size))) }
            sines = (0..<(size / 2)).map { Float(-sin(2 * Double.pi * Double($0) / Double(size))) }
            var bitsReversed = [Int](repeating: 0, count: size)
            let bits = size.trailingZeroBitCount
            for index in 0..<size {
                var value = 0
                for bit in 0..<bits where index & (1 << bit) != 0 { value |= 1 << (bits - 1 - bit) }
                bitsReversed[index] = value
            }
            reversed = bitsReversed
        }
    }
    private static let tables = Tables()

    /// FFT bins of each band: `bins[band]..<bins[band + 1]`.
    private let bins: [Int]
    private var real: [Float]
    private var imaginary: [Float]

    init(sampleRate: Int) {
        let size = Self.size
        let rate = Double(max(sampleRate, 8_000))
        let top = min(Self.highestHertz, rate * 0.45)
        let binHertz = rate / Double(size)
        var edges: [Int] = []
        for band in 0...Self.bandCount {
            let hertz = Self.lowestHertz * pow(top / Self.lowestHertz, Double(band) / Double(Self.bandCount))
            // At least one bin a band, ascending.
            let bin = max(Int((hertz / binHertz).rounded()), (edges.last ?? 0) + (band == 0 ? 0 : 1))
            edges.append(min(bin, size / 2))
        }
        bins = edges
        real = [Float](repeating: 0, count: size)
        imaginary = [Float](repeating: 0, count: size)
    }

    /// Appends the band energies (dB) of `samples` (at most `size`; fewer are padded with zeros).
    mutating func append(_ samples: UnsafeBufferPointer<Float>, to bands: inout [Float]) {
        let size = Self.size
        let tables = Self.tables
        // Through buffer pointers: a transform is about 25,000 element accesses, each of which
        // would otherwise check its array's bounds and uniqueness.
        real.withUnsafeMutableBufferPointer { real in
            imaginary.withUnsafeMutableBufferPointer { imaginary in
                tables.window.withUnsafeBufferPointer { window in
                    tables.reversed.withUnsafeBufferPointer { reversed in
                        for index in 0..<size {
                            let position = reversed[index]
                            real[index] = position < samples.count ? samples[position] * window[position] : 0
                            imaginary[index] = 0
                        }
                    }
                }
                tables.cosines.withUnsafeBufferPointer { cosines in
                    tables.sines.withUnsafeBufferPointer { sines in
                        var half = 1
                        while half < size {
                            let step = size / (half * 2)
                            var start = 0
                            while start < size {
                                for offset in 0..<half {
                                    let twiddle = offset * step
                                    let even = start + offset, odd = even + half
                                    let oddReal = real[odd] * cosines[twiddle] - imaginary[odd] * sines[twiddle]
                                    let oddImaginary = real[odd] * sines[twiddle] + imaginary[odd] * cosines[twiddle]
                                    real[odd] = real[even] - oddReal
                                    imaginary[odd] = imaginary[even] - oddImaginary
                                    real[even] += oddReal
                                    imaginary[even] += oddImaginary
                                }
                                start += half * 2
                            }
                            half *= 2
                        }
                    }
                }
            }
        }
        // The spectrum's shape, not its loudness: each band relative to the frame's mean (a song
        // that gets louder or softer is the same song; one with another timbre is not).
        let first = bands.count
        var sum: Float = 0
        for band in 0..<Self.bandCount {
            var energy: Float = 1e-10
            for bin in bins[band]..<max(bins[band + 1], bins[band] + 1) {
                energy += real[bin] * real[bin] + imaginary[bin] * imaginary[bin]
            }
            let level = 10 * log10(energy)
            bands.append(level)
            sum += level
        }
        let mean = sum / Float(Self.bandCount)
        for index in first..<bands.count { bands[index] -= mean }
    }
}
