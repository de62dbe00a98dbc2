import AACDecoding
import AudioDecoding
import ICYWire
import MPG123Decoding
import OggDecoding

/// Picks the decoder for a stream's codec: the one place that knows which adapter reads what.
/// The player and the split search ask here, so a new codec is one more case.
package enum AudioDecoders {
    /// What a decoder is opened for: packets of another configuration need a new decoder.
    /// FAAD2 takes AAC's from its first frame and fails every frame of another (an ad at
    /// another rate or channel count after `#EXT-X-DISCONTINUITY`); mpg123 and the Ogg decoders
    /// follow changes within their codec themselves.
    package struct Configuration: Hashable, Sendable {
        let codec: AudioCodec
        /// AAC's AudioSpecificConfig as ADTS carries it (object type, rate, channel
        /// configuration); zeros for the other codecs. Plain fields: this is made per packet.
        let profile: Int
        let sampleRate: Int
        let channelConfiguration: Int

        package init(_ header: AudioFrameHeader) {
            codec = header.codec
            if case .adts(let adts) = header {
                (profile, sampleRate, channelConfiguration) = (adts.profile, adts.sampleRate, adts.channelConfiguration)
            } else {
                (profile, sampleRate, channelConfiguration) = (0, 0, 0)
            }
        }
    }

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
