/// The codec of one Ogg link, known from its first packet's signature.
package enum OggCodec: String, Sendable, Hashable {
    case vorbis = "Vorbis", opus = "Opus", flac = "FLAC", theora = "Theora", speex = "Speex", unknown = "unknown"
    /// Ogg Skeleton: an index of the other logical streams beside it, never audio.
    case skeleton = "Skeleton"

    package init(identificationPacket packet: ArraySlice<UInt8>) {
        func starts(with signature: [UInt8]) -> Bool { packet.starts(with: signature) }
        if starts(with: [0x01] + Array("vorbis".utf8)) { self = .vorbis }
        else if starts(with: Array("OpusHead".utf8)) { self = .opus }
        else if starts(with: [0x7F] + Array("FLAC".utf8)) { self = .flac }
        else if starts(with: [0x80] + Array("theora".utf8)) { self = .theora }
        else if starts(with: Array("Speex   ".utf8)) { self = .speex }
        else if starts(with: Array("fishead\0".utf8)) { self = .skeleton }
        else { self = .unknown }
    }

    /// Header packets before the audio: identification, comment and (Vorbis) setup.
    package var headerPacketCount: Int? {
        switch self {
        case .vorbis: 3
        case .opus: 2
        default: nil
        }
    }

    package var fileExtension: String { self == .opus ? "opus" : "ogg" }

    /// A stream that only describes the others (Skeleton): its pages carry nothing to play or keep.
    package var isMetadataOnly: Bool { self == .skeleton }
}
