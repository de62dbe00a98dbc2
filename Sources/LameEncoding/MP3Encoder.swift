import CLame

/// Why an `MP3Encoder` could not be set up. One line each, fit for a log or a CLI error.
package enum EncoderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `lame_init` returned NULL (out of memory).
    case initializationFailed
    /// LAME rejected the combination (`lame_init_params` failed) or would silently change it.
    case unsupportedSettings(sampleRate: Int, channels: Int, bitrate: Int)

    package var description: String {
        switch self {
        case .initializationFailed:
            "LAME could not allocate an encoder"
        case let .unsupportedSettings(sampleRate, channels, bitrate):
            "LAME cannot encode \(channels) channel(s) at \(sampleRate) Hz as \(bitrate) kbps CBR MP3"
        }
    }
}

/// A constant-bitrate MP3 encoder over one LAME handle.
///
/// The output is a bare run of MPEG audio frames: no Xing/Info frame and no ID3 tags, so it can be
/// sent as a stream or concatenated with the output of another encoder.
///
/// Not `Sendable`: a LAME handle keeps encoder state between calls and has no locking, so one
/// instance belongs to one thread or task at a time.
package final class MP3Encoder {
    package let sampleRate: Int
    package let channels: Int
    /// Kilobits per second.
    package let bitrate: Int

    private let flags: OpaquePointer
    /// Where LAME writes before its frames are appended to the caller's buffer. LAME wants its
    /// worst case free up front (1.25 times the samples, plus 7200 bytes): zero-filling that much
    /// of the caller's array at every call wrote several times the bytes LAME produces, and in a
    /// debug build, element by element, cost more than the encoding itself.
    private var scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 7200)

    /// - Parameters:
    ///   - quality: LAME's algorithm quality, 0 (best, slowest) to 9 (worst, fastest).
    ///   - inputSampleRate: the rate of the samples given, when LAME must resample them to
    ///     `sampleRate` (nil: the same).
    package init(sampleRate: Int = 44100, channels: Int = 2, bitrate: Int = 128, quality: Int = 5,
                 inputSampleRate: Int? = nil) throws(EncoderError) {
        guard (1...2).contains(channels), sampleRate > 0, bitrate > 0 else {
            throw .unsupportedSettings(sampleRate: sampleRate, channels: channels, bitrate: bitrate)
        }
        guard let flags = lame_init() else { throw .initializationFailed }
        self.flags = flags
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = bitrate

        lame_set_in_samplerate(flags, Int32(inputSampleRate ?? sampleRate))
        // Without this LAME may resample to a rate it prefers for the bitrate.
        lame_set_out_samplerate(flags, Int32(sampleRate))
        lame_set_num_channels(flags, Int32(channels))
        lame_set_mode(flags, channels == 1 ? MONO : JOINT_STEREO)
        lame_set_VBR(flags, vbr_off)
        lame_set_brate(flags, Int32(bitrate))
        lame_set_quality(flags, Int32(min(max(quality, 0), 9)))
        // A Xing/Info frame would be a silent non-audio frame at the start of every stream (a
        // recording writes its own, with the counts of each file).
        lame_set_bWriteVbrTag(flags, 0)
        lame_set_write_id3tag_automatic(flags, 0)

        // LAME rounds an invalid bitrate or rate to a valid one without saying so; a caller that
        // announces `icy-br` needs exactly what it asked for, so a changed value is an error.
        guard lame_init_params(flags) >= 0,
              Int(lame_get_brate(flags)) == bitrate,
              Int(lame_get_out_samplerate(flags)) == sampleRate else {
            // Every stored property is set by now, so deinit runs and closes the handle.
            throw .unsupportedSettings(sampleRate: sampleRate, channels: channels, bitrate: bitrate)
        }
    }

    deinit {
        lame_close(flags)
        scratch.deallocate()
    }

    /// Encodes interleaved samples (L R L R ... for stereo) and returns whatever whole frames LAME
    /// has ready; it keeps up to about two frames of samples back until more arrive or `flush()`.
    ///
    /// - Precondition: `interleaved.count` is a multiple of `channels`.
    package func encode(interleaved samples: [Int16]) -> [UInt8] {
        var output: [UInt8] = []
        samples.withUnsafeBufferPointer { encode(interleaved: $0, appendingTo: &output) }
        return output
    }

    /// `encode(interleaved:)` appending to `output`: a caller that keeps one buffer allocates
    /// nothing once it has grown to a call's worth.
    package func encode(interleaved samples: UnsafeBufferPointer<Int16>, appendingTo output: inout [UInt8]) {
        precondition(samples.count % channels == 0, "sample count must be a multiple of the channel count")
        let frames = samples.count / channels
        guard frames > 0, let pcmBase = samples.baseAddress else { return }
        // LAME's documented worst case: 1.25 * samples + 7200.
        let capacity = frames + frames / 4 + 7200
        append(capacity: capacity, to: &output) { outBase in
            // The interleaved entry point assumes two channels; mono goes through the planar one.
            if channels == 2 {
                return lame_encode_buffer_interleaved(
                    flags, UnsafeMutablePointer(mutating: pcmBase), Int32(frames), outBase, Int32(capacity))
            }
            return lame_encode_buffer(flags, pcmBase, pcmBase, Int32(frames), outBase, Int32(capacity))
        }
    }

    /// `flush()` appending to `output`.
    package func flush(appendingTo output: inout [UInt8]) {
        append(capacity: 7200, to: &output) { lame_encode_flush(flags, $0, 7200) }
    }

    private func append(capacity: Int, to output: inout [UInt8], _ encode: (UnsafeMutablePointer<UInt8>) -> Int32) {
        if scratch.count < capacity {
            scratch.deallocate()
            scratch = .allocate(capacity: capacity)
        }
        // At least 7200 bytes, so its base is never nil.
        let written = encode(scratch.baseAddress!)
        // Negative results are -1 (buffer too small: impossible with the sizes given), -2 (malloc
        // failed) or -3 (params not initialised: impossible after init). None is recoverable.
        precondition(written >= 0, "lame_encode failed with code \(written)")
        output.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<Int(written)]))
    }

    /// Encodes what LAME still holds (padded with silence to a whole frame) and ends the stream;
    /// the encoder must not be used after this.
    package func flush() -> [UInt8] {
        var output: [UInt8] = []
        flush(appendingTo: &output)
        return output
    }
}
