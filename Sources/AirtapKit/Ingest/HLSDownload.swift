import AESDecryption
import CurlSource
import ICYWire

/// What an `HLSFeed` is fetching besides its playlist: one transfer at a time.
enum HLSDownload {
    case key(TransferID, uri: String, body: [UInt8], failure: String?)
    case initSegment(TransferID, map: HLSMap, body: [UInt8], failure: String?)
    case segment(HLSSegmentFetch)

    var transfer: TransferID {
        switch self {
        case .key(let id, _, _, _), .initSegment(let id, _, _, _): id
        case .segment(let fetch): fetch.transfer
        }
    }
}

struct HLSSegmentFetch {
    let transfer: TransferID
    let segment: HLSSegment
    var reader: HLSSegmentReader
    let decryptor: AES128CBCDecryptor?
    var byteCount = 0
    var failure: String?
    var isPaused = false
    /// A byte range the server answered with the whole resource (200): bytes to skip first.
    var skip = 0
    /// A byte range's bytes still wanted; nil: all of the body.
    var remaining: Int?
    /// Audio bytes the segment gave: one that gives none is a lost segment, not a success.
    var audioBytes = 0
    /// The stream's first good answer, told to the owner with the container its first bytes show.
    var firstAnswer: (url: String, head: ResponseHead)?
}

extension HLSStreamDescription {
    /// What the first media playlist says: told with the first segment.
    init(_ media: HLSMediaPlaylist, handedOut: [HLSSegment], variants: [Variant], chosenVariant: Int?) {
        let first = media.segments.first
        var isEncrypted = false
        if case .aes128? = first?.key?.method { isEncrypted = true }
        // Told by the first segment's bytes once they arrive; the playlist knows only fMP4's map.
        self.init(
            variants: variants, chosenVariant: chosenVariant, targetDuration: media.targetDuration, isLive: !media.hasEndList,
            secondsBehindLiveEdge: media.hasEndList ? 0 : handedOut.map(\.duration).reduce(0, +),
            container: first?.map != nil ? "fMP4" : "unknown", isEncrypted: isEncrypted,
            startsAtFirstSegment: handedOut.first != nil && handedOut.first?.sequence == media.segments.first?.sequence)
    }
}
