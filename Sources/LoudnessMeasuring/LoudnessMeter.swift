import CEBUR128

/// What one measurement found: EBU R128 integrated loudness and the sample peak.
package struct LoudnessMeasurement: Sendable, Hashable {
    /// Integrated loudness (LUFS): gated, over the whole measurement.
    package let integratedLoudness: Double
    /// The largest absolute sample value, where 1.0 is full scale.
    package let samplePeak: Double

    package init(integratedLoudness: Double, samplePeak: Double) {
        self.integratedLoudness = integratedLoudness
        self.samplePeak = samplePeak
    }
}

/// Measures 16-bit interleaved PCM with libebur128: integrated loudness and sample peak.
///
/// The gating blocks are kept in libebur128's histogram (`EBUR128_MODE_HISTOGRAM`: a thousand
/// bins of 0.1 dB), so memory stays the same for a three-minute track and for a day-long one.
/// A change of rate or channels mid-measurement starts a second state, and the result gates
/// all of them together (`ebur128_loudness_global_multiple`), as one programme.
/// Owns C state: used from one thread at a time, so not Sendable.
package final class LoudnessMeter {
    private var states: [UnsafeMutablePointer<ebur128_state>] = []
    private var format: (sampleRate: Int, channels: Int)?
    /// Whether any samples were measured.
    package private(set) var hasSamples = false

    /// libebur128 accepts rates up to 2.8 MHz and these channel counts; anything else a decoder
    /// reports is not audio it measures.
    private static let rates = 1...2_822_400
    private static let channelCounts = 1...64

    package init() {}

    deinit {
        for state in states {
            var pointer: UnsafeMutablePointer<ebur128_state>? = state
            ebur128_destroy(&pointer)
        }
    }

    /// Adds interleaved samples of `channels` channels at `sampleRate`. Returns false when
    /// libebur128 cannot take them (an impossible format, no memory): the measurement is then
    /// incomplete, and the caller drops it.
    @discardableResult
    package func add(_ samples: UnsafeBufferPointer<Int16>, sampleRate: Int, channels: Int) -> Bool {
        guard Self.rates.contains(sampleRate), Self.channelCounts.contains(channels),
              let base = samples.baseAddress else { return samples.isEmpty }
        if format.map({ $0.sampleRate != sampleRate || $0.channels != channels }) ?? true {
            // The sample peak costs a comparison per sample inside libebur128's own loop (its
            // momentary loudness, which the mode adds, integrated loudness needs anyway).
            let mode = Int32(EBUR128_MODE_I.rawValue | EBUR128_MODE_SAMPLE_PEAK.rawValue | EBUR128_MODE_HISTOGRAM.rawValue)
            guard let state = ebur128_init(UInt32(channels), UInt(sampleRate), mode) else { return false }
            states.append(state)
            format = (sampleRate, channels)
        }
        guard let state = states.last else { return false }
        let frames = samples.count / channels
        guard ebur128_add_frames_short(state, base, frames) == Int32(EBUR128_SUCCESS.rawValue) else { return false }
        hasSamples = hasSamples || frames > 0
        return true
    }

    /// The measurement so far; nil when nothing was measured or everything was below the
    /// absolute gate (-70 LUFS: silence), which has no loudness to correct.
    package func result() -> LoudnessMeasurement? {
        guard hasSamples, !states.isEmpty else { return nil }
        var loudness = 0.0
        var pointers: [UnsafeMutablePointer<ebur128_state>?] = states
        let status = ebur128_loudness_global_multiple(&pointers, pointers.count, &loudness)
        guard status == Int32(EBUR128_SUCCESS.rawValue), loudness.isFinite else { return nil }
        var peak = 0.0
        for state in states {
            for channel in 0..<state.pointee.channels {
                var channelPeak = 0.0
                if ebur128_sample_peak(state, channel, &channelPeak) == Int32(EBUR128_SUCCESS.rawValue) {
                    peak = max(peak, channelPeak)
                }
            }
        }
        return LoudnessMeasurement(integratedLoudness: loudness, samplePeak: peak)
    }
}
