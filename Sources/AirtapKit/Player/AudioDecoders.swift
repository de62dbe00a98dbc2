import AACDecoding
import AudioDecoding
import ICYWire
import MPG123Decoding
import OggDecoding

/// Picks the decoder for a stream's codec: the one place that knows which adapter reads what.
/// The player and the split search ask here, so a new codec is one more case.
package enum AudioDecoders {
    package static func make(for codec: AudioCodec) throws(DecoderError) -> any AudioDecoder {
        switch codec {
        case .mp3, .mp2, .mp1:
            return try MP3Decoder()
        case .aac:
            return try AACDecoder()
        case .vorbis:
            return try VorbisDecoder()
        case .opus:
            return try OpusDecoder()
        }
    }
}
