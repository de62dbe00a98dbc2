import AirtapIngest
import AirtapStations
import AudioDecoding
import ICYWire
import LameEncoding
import Locking
import Logging

/// A sink that decodes whatever a station sends (MP3, AAC, Ogg Vorbis/Opus, in any container the
/// ingest reads) and hands `downstream` the same stream re-encoded as constant-bitrate MP3: the
/// same events, with MP3 frames for packets.
///
/// One decoder and one encoder for the station's whole run, fed one continuous run of PCM: the
/// ingest already splices reconnects and joins HLS segments into one packet stream, and each
/// decoder drops its own delay, so segment boundaries, frame boundaries and reconnects reach the
/// encoder as nothing at all. Only a real gap (`.discontinuity`) resets the decoder. A new sample
/// rate or channel count ends the encoder (flushed) and starts another: MP3 frames say their own
/// format, so the output goes on in the same stream.
///
/// CPU-bound: put it behind a lossless `QueuedSink` on a shared pool, never on the network loop;
/// when it falls behind, that queue's back-pressure pauses this station's transfer only.
package final class MP3Transcoder: StreamSink {
    private let core: Locked<MP3TranscoderCore>
    private let downstream: any StreamSink

    /// - Parameter sourceFormat: told each format the station's own stream announces (the codec
    ///   it transcodes from), on the transcoder's queue.
    package init(_ setting: TranscodeSetting, downstream: any StreamSink, logger: Logger,
                 sourceFormat: @escaping @Sendable (AudioFrameHeader) -> Void = { _ in }) {
        self.core = Locked(MP3TranscoderCore(setting: setting, logger: logger, sourceFormat: sourceFormat))
        self.downstream = downstream
    }

    package func receive(_ event: StreamEvent) throws {
        try core.withLock { core in try core.receive(event, downstream: downstream) }
    }

    package func batchEnded() { downstream.batchEnded() }
}

/// The transcoder's state: the decoder and encoder of the current stream, and the encoded bytes
/// that do not make a whole frame yet. Used from the transcoder's queue only.
struct MP3TranscoderCore {
    let setting: TranscodeSetting
    let logger: Logger
    let sourceFormat: @Sendable (AudioFrameHeader) -> Void

    private var decoder: (any AudioDecoder)?
    private var decoderCodec: AudioCodec?
    private var encoder: MP3Encoder?
    /// The PCM format `encoder` takes.
    private var encoderInput: PCMFormat?
    /// Encoded bytes not yet handed on (at most a partial frame between calls).
    private var encoded: [UInt8] = []
    /// Bytes of MP3 handed on: the output stream's positions.
    private var position = 0
    private var outputFormat: MP3FrameHeader?
    /// An encoder that could not be made for a decoded format: found inside the decoder's
    /// callback, which cannot throw, and thrown once the packet is done.
    private var failure: (any Error)?

    init(setting: TranscodeSetting, logger: Logger, sourceFormat: @escaping @Sendable (AudioFrameHeader) -> Void) {
        self.setting = setting
        self.logger = logger
        self.sourceFormat = sourceFormat
        encoded.reserveCapacity(16 * 1024)
    }

    mutating func receive(_ event: StreamEvent, downstream: any StreamSink) throws {
        switch event {
        case .packet(let packet):
            do {
                try transcode(packet)
            } catch {
                // The queue in front detaches this sink without a word: say why here.
                logger.error("transcode stopped: \(error)")
                throw error
            }
            try handOn(to: downstream)
        case .format(let header):
            sourceFormat(header)
        case .metadata(let change):
            // The title goes with the audio encoded so far: the encoder holds back a frame or two.
            try downstream.receive(.metadata(TrackChange(info: change.info, position: position, source: change.source,
                                                          placement: change.placement)))
        case .discontinuity:
            decoder?.reset()
            try downstream.receive(.discontinuity(position: position))
        case .ended:
            finishEncoder()
            try handOn(to: downstream)
            try downstream.receive(event)
        case .head, .connection:
            try downstream.receive(event)
        }
    }

    private mutating func transcode(_ packet: Packet) throws {
        let codec = packet.header.codec
        if decoder == nil || decoderCodec != codec {
            decoder = try AudioDecoders.make(for: codec)
            decoderCodec = codec
        }
        guard let decoder else { return }
        do throws(DecoderError) {
            try decoder.decode(packet.bytes) { format, samples in encode(samples, format: format) }
        } catch {
            guard error.kind == .malformed else { throw error }
            logger.notice("transcode: \(error.description); the decoder starts afresh")
            decoder.reset()
        }
        if let failure {
            self.failure = nil
            throw failure
        }
    }

    private mutating func encode(_ samples: UnsafeBufferPointer<Int16>, format: PCMFormat) {
        guard failure == nil else { return }
        if format != encoderInput {
            finishEncoder()
            do throws(EncoderError) {
                encoder = try Self.makeEncoder(setting, for: format)
                encoderInput = format
            } catch {
                failure = error
                return
            }
        }
        encoder?.encode(interleaved: samples, appendingTo: &encoded)
    }

    static func makeEncoder(_ setting: TranscodeSetting, for format: PCMFormat) throws(EncoderError) -> MP3Encoder {
        let rate = MP3Rates.outputSampleRate(for: format.sampleRate, bitrate: setting.bitrate) ?? format.sampleRate
        return try MP3Encoder(sampleRate: rate, channels: format.channels, bitrate: setting.bitrate,
                              inputSampleRate: format.sampleRate)
    }

    /// Flushes the current encoder's last samples into `encoded`; the next samples start a new one.
    private mutating func finishEncoder() {
        encoder?.flush(appendingTo: &encoded)
        encoder = nil
        encoderInput = nil
    }

    /// Hands on every whole frame in `encoded`, announcing the format first when it is new.
    private mutating func handOn(to downstream: any StreamSink) throws {
        var offset = 0
        while encoded.count - offset >= 4 {
            guard let header = MP3FrameHeader(encoded[offset..<(offset + 4)]) else {
                // LAME writes nothing but frames: bytes that are not one mean a bug, not a stream to keep.
                logger.error("transcode: the encoder wrote something that is not an MP3 frame; dropped")
                offset = encoded.count
                break
            }
            let end = offset + header.frameLength
            guard end <= encoded.count else { break }
            if header.sampleRate != outputFormat?.sampleRate || header.channels != outputFormat?.channels {
                outputFormat = header
                try downstream.receive(.format(.mpeg(header)))
            }
            try downstream.receive(.packet(Packet(bytes: encoded[offset..<end], position: position, header: .mpeg(header))))
            position += header.frameLength
            offset = end
        }
        encoded.removeFirst(offset)
    }
}
