/// The one interface every decoder sits behind: whole packets in, 16-bit interleaved PCM out.
///
/// The player and the split search's level meter only know this protocol, the way libout123
/// puts its outputs behind a few calls; each codec's adapter target (libmpg123, FAAD2, ...)
/// implements it, and `AirtapKit`'s `AudioDecoders.make(for:)` picks one for a stream's codec.
/// A decoder owns a C handle: one per stream, used from one thread, so it is not Sendable.
package protocol AudioDecoder: AnyObject {
    /// The format of the samples the last `decode` produced, once known. It is read from the
    /// decoder, never from a frame header alone (HE-AAC decodes at twice the header's rate).
    var format: PCMFormat? { get }

    /// Decodes one whole packet (a frame, header included) and hands every block of samples it
    /// produced to `body`, in order. A decoder may hold a packet back until it sees the next one.
    /// A packet it cannot decode is skipped (no samples) unless the stream is beyond repair,
    /// which throws `.malformed`: the caller resets the decoder and goes on.
    func decode(_ packet: UnsafeRawBufferPointer, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) throws(DecoderError)

    /// Forgets the stream so far (a new connection, a gap): the next packet starts afresh.
    func reset()
}

/// Sample rate and channel count of decoded audio (always signed 16-bit, interleaved).
package struct PCMFormat: Sendable, Hashable, CustomStringConvertible {
    package let sampleRate: Int
    package let channels: Int

    package init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    package var description: String { "\(sampleRate) Hz, \(channels) channel\(channels == 1 ? "" : "s")" }
}

/// Why a decoder could not be made or could not go on.
package struct DecoderError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Kind: Sendable, Hashable {
        /// The library could not make a decoder (out of memory, bad build): a local fault.
        case unavailable
        /// The stream is beyond what the decoder can resync on: reset and go on.
        case malformed
        /// The stream's codec or profile is one no decoder here reads.
        case unsupported
    }

    package let kind: Kind
    package let description: String

    package init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}

extension AudioDecoder {
    /// `decode(_:_:)` for a packet's bytes (`Packet.bytes` is an ArraySlice).
    package func decode(_ bytes: ArraySlice<UInt8>, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) throws(DecoderError) {
        var failure: DecoderError?
        bytes.withUnsafeBytes { raw in
            do throws(DecoderError) { try decode(raw, body) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    package func decode(_ bytes: [UInt8], _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) throws(DecoderError) {
        try decode(bytes[...], body)
    }
}
