import ICYWire

/// A track's ReplayGain 2.0 values, from its EBU R128 integrated loudness and sample peak, and
/// the tag texts players read them from.
package struct ReplayGain: Sendable, Hashable {
    /// ReplayGain 2.0's reference: a track measured at this loudness plays unchanged.
    package static let referenceLoudness = -18.0
    /// Ogg Opus's reference (RFC 7845, `R128_TRACK_GAIN`).
    package static let opusReferenceLoudness = -23.0

    /// LUFS.
    package let integratedLoudness: Double
    /// 1.0 is full scale.
    package let samplePeak: Double

    package init(integratedLoudness: Double, samplePeak: Double) {
        self.integratedLoudness = integratedLoudness
        self.samplePeak = samplePeak
    }

    /// dB to add to play the track at the reference loudness.
    package var trackGain: Double { Self.referenceLoudness - integratedLoudness }

    /// `REPLAYGAIN_TRACK_GAIN`: "-6.52 dB".
    package var trackGainText: String { Self.fixed(trackGain, decimals: 2) + " dB" }

    /// `REPLAYGAIN_TRACK_PEAK`: "0.988523".
    package var trackPeakText: String { Self.fixed(samplePeak, decimals: 6) }

    /// The fields MP3 and AAC files carry as ID3v2 `TXXX` frames and Vorbis files as comments,
    /// in this order.
    package var tagFields: [(key: String, value: String)] {
        [("REPLAYGAIN_TRACK_GAIN", trackGainText), ("REPLAYGAIN_TRACK_PEAK", trackPeakText)]
    }

    /// `R128_TRACK_GAIN` of an Ogg Opus file (RFC 7845 5.2.1): Q7.8 dB towards -23 LUFS, on top of
    /// the `outputGain` (Q7.8) of its identification header, which the measured audio had not had
    /// applied. Clamped to what 16 bits hold.
    package func opusTrackGain(outputGain: Int16) -> Int16 {
        let gain = (Self.opusReferenceLoudness - integratedLoudness) * 256 - Double(outputGain)
        guard gain.isFinite else { return 0 }
        return Int16(max(Double(Int16.min), min(Double(Int16.max), gain.rounded())))
    }

    /// The Ogg comment fields for a file of `codec`: Vorbis gets ReplayGain's, Opus only
    /// `R128_TRACK_GAIN` (RFC 7845 forbids REPLAYGAIN_* in Opus files); `opusHead` is the link's
    /// identification packet, whose output gain the Opus value is relative to.
    package func oggFields(for codec: AudioCodec, opusHead: ArraySlice<UInt8>?) -> [VorbisComments.Field] {
        switch codec {
        case .mp3, .mp2, .mp1, .aac:
            return []
        case .vorbis:
            return tagFields.map { VorbisComments.Field(key: $0.key, value: $0.value) }
        case .opus:
            let outputGain = opusHead.flatMap(Self.opusOutputGain) ?? 0
            return [VorbisComments.Field(key: "R128_TRACK_GAIN", value: String(opusTrackGain(outputGain: outputGain)))]
        }
    }

    /// The output gain (Q7.8 dB, little-endian at byte 16) of an OpusHead packet; nil when the
    /// bytes are not one.
    package static func opusOutputGain(_ head: ArraySlice<UInt8>) -> Int16? {
        guard head.count >= 19, head.starts(with: Array("OpusHead".utf8)) else { return nil }
        let low = UInt16(head[head.startIndex + 16]), high = UInt16(head[head.startIndex + 17])
        return Int16(bitPattern: low | high << 8)
    }

    /// `value` with exactly `decimals` digits after the point, rounded half away from zero; no
    /// "-0.00" (ICYWire has no printf).
    static func fixed(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e15 else { return value < 0 ? "-inf" : "inf" }
        let units = UInt64(scaled)
        let whole = units / UInt64(scale)
        let fraction = String(units % UInt64(scale))
        let sign = value < 0 && units != 0 ? "-" : ""
        guard decimals > 0 else { return sign + String(whole) }
        return sign + String(whole) + "." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }
}
