@testable import ICYWire
@testable import RecordingRules
import Testing

@Suite("ReplayGain values and their tag texts")
struct ReplayGainTests {
    @Test("gain is -18 LUFS minus the loudness, two decimals and ' dB'; peak six decimals")
    func texts() {
        let loud = ReplayGain(integratedLoudness: -11.48, samplePeak: 0.9885234)
        #expect(loud.trackGainText == "-6.52 dB")
        #expect(loud.trackPeakText == "0.988523")
        let quiet = ReplayGain(integratedLoudness: -25.004, samplePeak: 0.05)
        #expect(quiet.trackGainText == "7.00 dB")
        #expect(quiet.trackPeakText == "0.050000")
        #expect(ReplayGain(integratedLoudness: -18.001, samplePeak: 1).trackGainText == "0.00 dB")
        #expect(ReplayGain(integratedLoudness: -17.996, samplePeak: 1).trackGainText == "-0.00 dB" ||
                ReplayGain(integratedLoudness: -17.996, samplePeak: 1).trackGainText == "0.00 dB")
        #expect(loud.tagFields.map(\.key) == ["REPLAYGAIN_TRACK_GAIN", "REPLAYGAIN_TRACK_PEAK"])
    }

    @Test("fixed decimals round half away from zero and never say -0")
    func fixed() {
        #expect(ReplayGain.fixed(1.005, decimals: 2) == "1.00" || ReplayGain.fixed(1.005, decimals: 2) == "1.01")
        #expect(ReplayGain.fixed(-0.004, decimals: 2) == "0.00")
        #expect(ReplayGain.fixed(-12.345678, decimals: 3) == "-12.346")
        #expect(ReplayGain.fixed(0.5, decimals: 0) == "1")
        #expect(ReplayGain.fixed(.nan, decimals: 2) == "0")
    }

    @Test("Opus: R128_TRACK_GAIN in Q7.8 towards -23 LUFS, on top of the header's output gain, clamped")
    func opus() {
        let track = ReplayGain(integratedLoudness: -14.5, samplePeak: 0.9)
        // -23 - -14.5 = -8.5 dB = -2176 in Q7.8.
        #expect(track.opusTrackGain(outputGain: 0) == -2176)
        // A header that already lowers by 1 dB (-256) leaves -7.5 dB to the tag.
        #expect(track.opusTrackGain(outputGain: -256) == -1920)
        #expect(ReplayGain(integratedLoudness: -300, samplePeak: 0).opusTrackGain(outputGain: 0) == Int16.max)
        var head: [UInt8] = Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0, 0]
        head += [0x00, 0xFF, 0]  // output gain -256 (little-endian), mapping family 0
        #expect(ReplayGain.opusOutputGain(head[...]) == -256)
        #expect(ReplayGain.opusOutputGain(Array("OpusTags".utf8)[...]) == nil)
        let fields = track.oggFields(for: .opus, opusHead: head[...])
        #expect(fields == [VorbisComments.Field(key: "R128_TRACK_GAIN", value: "-1920")])
        #expect(track.oggFields(for: .vorbis, opusHead: nil).map(\.key) == ["REPLAYGAIN_TRACK_GAIN", "REPLAYGAIN_TRACK_PEAK"])
        #expect(track.oggFields(for: .mp3, opusHead: nil).isEmpty)
    }
}
