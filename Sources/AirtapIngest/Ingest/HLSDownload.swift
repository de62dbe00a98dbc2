import AESDecryption
import CurlSource
import HLSWire
import ICYWire

/// What an `HLSFeed` is fetching besides its playlist: one transfer at a time.
enum HLSDownload {
    case key(TransferID, uri: String, HLSSmallBody)
    case initSegment(TransferID, map: HLSMap, HLSSmallBody)
    case segment(HLSSegmentFetch)

    var transfer: TransferID {
        switch self {
        case .key(let id, _, _), .initSegment(let id, _, _): id
        case .segment(let fetch): fetch.transfer
        }
    }

    /// A key's or an init segment's fetch, its body failed for `reason`; a segment's fetch as it
    /// is (its failure waits on whether it is paused).
    func failingSmallBody(_ reason: String?) -> HLSDownload {
        switch self {
        case .key(let id, let uri, var body):
            body.failure = reason
            return .key(id, uri: uri, body)
        case .initSegment(let id, let map, var body):
            body.failure = reason
            return .initSegment(id, map: map, body)
        case .segment:
            return self
        }
    }
}

/// A key's or an init segment's body: kept whole, bounded before it grows, failed once for good.
struct HLSSmallBody {
    let limit: Int
    /// The failure a body over `limit` is ("the key is longer than 16 bytes").
    let tooLarge: String
    var bytes: [UInt8] = []
    var failure: String?

    static var key: HLSSmallBody { HLSSmallBody(limit: AES128CBCDecryptor.keyLength, tooLarge: "the key is longer than 16 bytes") }

    static func initSegment(limit: Int) -> HLSSmallBody {
        HLSSmallBody(limit: limit, tooLarge: "the init segment is larger than \(limit >> 20) MiB")
    }

    /// Keeps `chunk`; stops the transfer once the body has failed or would pass `limit`.
    mutating func append(_ chunk: UnsafeRawBufferPointer) -> ReceiveDecision {
        guard failure == nil else { return .abort }
        guard bytes.count + chunk.count <= limit else {
            failure = tooLarge
            return .abort
        }
        bytes.append(contentsOf: chunk)
        return .accepted
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
