/// The sample rates and bitrates an MP3 stream may have (MPEG-1, MPEG-2 and MPEG-2.5 Layer III),
/// so a caller can pick settings LAME accepts before it makes an encoder.
package enum MP3Rates {
    /// MPEG-1: 32 to 48 kHz.
    static let mpeg1SampleRates = [32000, 44100, 48000]
    /// MPEG-2 and MPEG-2.5: 8 to 24 kHz.
    static let mpeg2SampleRates = [8000, 11025, 12000, 16000, 22050, 24000]
    static let mpeg1Bitrates: Set = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    static let mpeg2Bitrates: Set = [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]

    /// Every bitrate (kbit/s) some MP3 sample rate allows, ascending.
    package static var bitrates: [Int] { mpeg1Bitrates.union(mpeg2Bitrates).sorted() }

    /// The sample rate to encode audio of `inputRate` at `bitrate` kbit/s: the input's own when
    /// MP3 has it at that bitrate, else the nearest that has (LAME resamples). Nil for a bitrate
    /// no MP3 rate allows.
    package static func outputSampleRate(for inputRate: Int, bitrate: Int) -> Int? {
        let rates = (mpeg1Bitrates.contains(bitrate) ? mpeg1SampleRates : [])
            + (mpeg2Bitrates.contains(bitrate) ? mpeg2SampleRates : [])
        return rates.min { abs($0 - inputRate) < abs($1 - inputRate) }
    }
}
