import AudioDecoding
import CMPG123

/// Decodes MPEG audio frames to 16-bit interleaved PCM with libmpg123's feed API.
///
/// Feed it whole frames (the ingest core's packets): ICY metadata must already be gone,
/// mpg123 does not strip it. One decoder per stream; use it from one thread.
package final class MP3Decoder: AudioDecoder {
    private let handle: OpaquePointer
    package private(set) var format: PCMFormat?
    private var output = [UInt8](repeating: 0, count: 1 << 16)

    package init() throws(DecoderError) {
        var error: Int32 = 0
        guard let handle = mpg123_new(nil, &error) else {
            throw DecoderError(.unavailable, "mpg123: \(String(cString: mpg123_plain_strerror(error)))")
        }
        self.handle = handle
        mpg123_param2(handle, Int32(MPG123_ADD_FLAGS.rawValue), Int(MPG123_QUIET.rawValue), 0)
        // Always 16-bit signed, whatever the stream's rate and channels.
        mpg123_format_none(handle)
        var rates: UnsafePointer<Int>?
        var count = 0
        mpg123_rates(&rates, &count)
        for index in 0..<count {
            if let rate = rates?[index] {
                mpg123_format(handle, rate, Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue), Int32(MPG123_ENC_SIGNED_16.rawValue))
            }
        }
        guard mpg123_open_feed(handle) == MPG123_OK.rawValue else {
            mpg123_delete(handle)
            throw DecoderError(.unavailable, "mpg123: cannot open the feed")
        }
    }

    /// Forgets the stream so far (a new connection, a gap): the next bytes start afresh.
    /// The format is kept until the next frame announces its own.
    package func reset() {
        mpg123_close(handle)
        mpg123_open_feed(handle)
    }

    deinit {
        mpg123_close(handle)
        mpg123_delete(handle)
    }

    /// Feeds `bytes` and hands every decoded block to `body`: interleaved samples in the current format.
    package func decode(_ bytes: UnsafeRawBufferPointer, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) throws(DecoderError) {
        var input = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        var inputCount = bytes.count
        while true {
            var produced = 0
            let result = output.withUnsafeMutableBytes { out in
                mpg123_decode(handle, input, inputCount, out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count, &produced)
            }
            // Feed once; then drain what mpg123 holds until it needs more.
            input = nil
            inputCount = 0
            if result == MPG123_NEW_FORMAT.rawValue {
                var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
                mpg123_getformat(handle, &rate, &channels, &encoding)
                format = PCMFormat(sampleRate: rate, channels: Int(channels))
            }
            if produced > 0, let format {
                output.withUnsafeBytes { raw in
                    body(format, UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: Int16.self), count: produced / 2))
                }
            }
            switch result {
            case MPG123_OK.rawValue, MPG123_NEW_FORMAT.rawValue: continue
            case MPG123_NEED_MORE.rawValue, MPG123_DONE.rawValue: return
            default:
                // A broken frame is the stream's fault, not a reason to stop: mpg123 resyncs on the next.
                if result == MPG123_ERR.rawValue, mpg123_errcode(handle) == MPG123_RESYNC_FAIL.rawValue {
                    throw DecoderError(.malformed, "mpg123: \(String(cString: mpg123_strerror(handle)))")
                }
                return
            }
        }
    }
}
