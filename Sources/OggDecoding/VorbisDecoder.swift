import AudioDecoding
import CVorbis
import ICYWire

/// Decodes Ogg Vorbis with libvorbis: packets in are whole Ogg pages (the ingest's packets),
/// a link's header pages first. A BOS page starts a new link (a new title of a chained stream):
/// the decoder forgets the old one and reads the new headers, so rate and channels may change.
/// One decoder per stream, used from one thread.
package final class VorbisDecoder: AudioDecoder {
    package private(set) var format: PCMFormat?
    private let info = UnsafeMutablePointer<vorbis_info>.allocate(capacity: 1)
    private let comment = UnsafeMutablePointer<vorbis_comment>.allocate(capacity: 1)
    private let dsp = UnsafeMutablePointer<vorbis_dsp_state>.allocate(capacity: 1)
    private let block = UnsafeMutablePointer<vorbis_block>.allocate(capacity: 1)
    private var headersRead = 0
    private var isSynthesizing = false
    private var assembler = OggPacketAssembler()
    private var output: [Int16] = []

    package init() throws(DecoderError) {
        vorbis_info_init(info)
        vorbis_comment_init(comment)
    }

    deinit {
        clearLink()
        info.deallocate()
        comment.deallocate()
        dsp.deallocate()
        block.deallocate()
    }

    package func reset() {
        startLink()
        assembler.reset()
    }

    /// Forgets the link's headers and synthesis, not the packets being assembled.
    private func startLink() {
        clearLink()
        vorbis_info_init(info)
        vorbis_comment_init(comment)
    }

    private func clearLink() {
        if isSynthesizing {
            vorbis_block_clear(block)
            vorbis_dsp_clear(dsp)
            isSynthesizing = false
        }
        vorbis_comment_clear(comment)
        vorbis_info_clear(info)
        headersRead = 0
    }

    package func decode(_ bytes: UnsafeRawBufferPointer, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) throws(DecoderError) {
        guard let page = oggPage(in: bytes) else { return }
        if page.isBeginningOfStream { reset() }
        do {
            try decodePackets(of: page, body)
        } catch {
            // The assembler is reset only here, once its own call has returned: the packets it
            // holds belong to the link whose headers failed.
            assembler.reset()
            throw error
        }
    }

    private func decodePackets(of page: OggPage, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) throws(DecoderError) {
        try assembler.packets(in: page) { packet throws(DecoderError) in
            var op = ogg_packet()
            op.packet = packet.baseAddress
            op.bytes = packet.count
            op.b_o_s = headersRead == 0 ? 1 : 0
            op.granulepos = -1
            if headersRead < 3 {
                // Audio of a link whose headers we never saw (joined mid-link): nothing to decode with.
                guard page.isBeginningOfStream || headersRead > 0 else { return }
                guard vorbis_synthesis_headerin(info, comment, &op) == 0 else {
                    startLink()
                    throw DecoderError(.malformed, "a Vorbis header that libvorbis cannot read")
                }
                headersRead += 1
                if headersRead == 3 {
                    guard vorbis_synthesis_init(dsp, info) == 0 else { throw DecoderError(.malformed, "Vorbis synthesis cannot start") }
                    vorbis_block_init(dsp, block)
                    isSynthesizing = true
                    format = PCMFormat(sampleRate: Int(info.pointee.rate), channels: Int(info.pointee.channels))
                }
                return
            }
            guard isSynthesizing, let format else { return }
            // A packet libvorbis refuses is skipped (no samples); the stream goes on.
            if vorbis_synthesis(block, &op) == 0 { vorbis_synthesis_blockin(dsp, block) }
            drain(format, body)
        }
    }

    private func drain(_ format: PCMFormat, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) {
        var channelsPCM: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>?
        while true {
            let frames = Int(vorbis_synthesis_pcmout(dsp, &channelsPCM))
            guard frames > 0, let channelsPCM else { return }
            let channels = format.channels
            if output.count < frames * channels { output = [Int16](repeating: 0, count: frames * channels) }
            output.withUnsafeMutableBufferPointer { out in
                for channel in 0..<channels {
                    guard let samples = channelsPCM[channel] else { continue }
                    for frame in 0..<frames {
                        let value = max(-1, min(1, samples[frame]))
                        out[frame * channels + channel] = Int16(value * 32767)
                    }
                }
                body(format, UnsafeBufferPointer(rebasing: out[0..<(frames * channels)]))
            }
            vorbis_synthesis_read(dsp, Int32(frames))
        }
    }
}
