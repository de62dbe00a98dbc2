import AudioDecoding
import COpus
import ICYWire

/// Decodes Ogg Opus with libopus at 48 kHz (the rate Opus decodes at whatever its input was):
/// packets in are whole Ogg pages, a link's OpusHead and OpusTags pages first; a BOS page starts
/// a new link. Mono and stereo (channel mapping family 0); surround links are refused.
/// One decoder per stream, used from one thread.
package final class OpusDecoder: AudioDecoder {
    package private(set) var format: PCMFormat?
    private var decoder: OpaquePointer?
    private var headersRead = 0
    /// Samples per channel still to drop at the start of the link (OpusHead's pre-skip).
    private var preSkip = 0
    private var assembler = OggPacketAssembler()
    /// 120 ms at 48 kHz, stereo: the longest Opus packet.
    private static let maxFrames = 5760
    private var output = [Int16](repeating: 0, count: 5760 * 2)

    package init() throws(DecoderError) {}

    deinit {
        if let decoder { opus_decoder_destroy(decoder) }
    }

    package func reset() {
        if let decoder { opus_decoder_destroy(decoder) }
        decoder = nil
        headersRead = 0
        preSkip = 0
        assembler.reset()
    }

    package func decode(_ bytes: UnsafeRawBufferPointer, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) throws(DecoderError) {
        guard let page = oggPage(in: bytes) else { return }
        if page.isBeginningOfStream { reset() }
        try assembler.packets(in: page) { packet throws(DecoderError) in
            switch headersRead {
            case 0:
                guard page.isBeginningOfStream else { return }
                guard let head = OggAudioInfo(identificationPacket: ArraySlice(packet)), head.codec == .opus else {
                    throw DecoderError(.malformed, "an OpusHead header that is not well formed")
                }
                guard head.channels <= 2 else {
                    throw DecoderError(.unsupported, "Opus with \(head.channels) channels (surround) cannot be played")
                }
                var error: Int32 = 0
                guard let created = opus_decoder_create(48000, Int32(head.channels), &error), error == OPUS_OK else {
                    throw DecoderError(.unavailable, "libopus: \(String(cString: opus_strerror(error)))")
                }
                decoder = created
                preSkip = head.preSkip
                format = PCMFormat(sampleRate: 48000, channels: head.channels)
                headersRead = 1
            case 1:
                headersRead = 2  // OpusTags: the title was read by the ingest already.
            default:
                guard let decoder, let format else { return }
                let frames = output.withUnsafeMutableBufferPointer { out -> Int in
                    guard let samples = out.baseAddress else { return 0 }
                    return Int(opus_decode(decoder, packet.baseAddress, Int32(packet.count), samples, Int32(Self.maxFrames), 0))
                }
                // A packet libopus refuses is skipped (no samples); the stream goes on.
                guard frames > 0 else { return }
                let skipped = min(preSkip, frames)
                preSkip -= skipped
                guard frames > skipped else { return }
                output.withUnsafeBufferPointer { out in
                    body(format, UnsafeBufferPointer(rebasing: out[(skipped * format.channels)..<(frames * format.channels)]))
                }
            }
        }
    }
}
