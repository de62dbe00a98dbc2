import HLSWire
import ICYWire

extension HLSFeed {
    /// What a playlist that cannot be read is, for a log line or an error.
    static func describe(_ error: HLSPlaylistError) -> String {
        switch error {
        case .notM3U8: "it does not start with #EXTM3U"
        case .tooManyLines(let limit): "more than \(limit) lines"
        case .lineTooLong(let line, let limit): "line \(line) is longer than \(limit) bytes"
        case .tooManySegments(let limit): "more than \(limit) segments"
        case .missingTargetDuration: "a media playlist without #EXT-X-TARGETDURATION"
        case .masterAndMedia: "variants and segments in one playlist"
        case .empty: "no variants and no segments"
        case .variantWithoutURI(let line): "the variant on line \(line) has no URI"
        case .malformed(let line, let tag): "\(tag) on line \(line) cannot be read"
        }
    }
}
