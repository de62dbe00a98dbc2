/// What an Ogg stream turns into for the rest of airtap.
package enum OggStreamEvent: Sendable {
    /// A new link whose headers are complete; its header pages follow as packets.
    case linkStarted(OggLink, position: Int)
    /// One whole page: first a link's header pages, then its audio pages.
    case packet(Packet)
    case skipped(position: Int, count: Int)
    /// A link in a codec airtap cannot read: the stream cannot be used.
    case unsupported(OggCodec)
    /// A link whose headers are broken or too large: its pages are dropped until the next link.
    case malformed(String)
}

/// Bytes of a chained Ogg stream in, `Packet`s of whole pages out (a link's header pages
/// first, each page with its sample count from the granule positions), and a title per link.
package struct OggPacketizer: Sendable {
    private var framer = OggFramer()
    private var links: OggLinkReader
    /// Stream position of the first header page of the link being assembled.
    private var linkStartPosition = 0
    /// The last granule position seen in the current link; nil until one arrived.
    private var lastGranule: Int64?
    /// The sequence number an audio page has when it directly follows the headers.
    private var firstAudioSequence: UInt32 = 0

    /// One page completes at most a few seconds of audio; a larger jump in the granule
    /// position is a seek or a lie, and counts as nothing. In seconds, not samples: a link may
    /// claim any sample rate, and what a page counts for must not grow with the claim.
    static let maxSecondsPerPage: Int64 = 10

    package init(maxHeaderBytes: Int = 1 << 20) {
        links = OggLinkReader(maxHeaderBytes: maxHeaderBytes)
    }


    package mutating func push(_ bytes: some Collection<UInt8>, _ emit: (OggStreamEvent) -> Void) {
        // The framer is taken out while it calls back into `self` (exclusive access); moving it
        // keeps its buffer uniquely referenced, so nothing is copied.
        var pages = takeFramer()
        pages.push(bytes) { handle($0, emit) }
        framer = pages
    }

    package mutating func finish(_ emit: (OggStreamEvent) -> Void) {
        var pages = takeFramer()
        pages.finish { handle($0, emit) }
        framer = pages
    }

    private mutating func takeFramer() -> OggFramer {
        defer { framer = OggFramer() }
        return framer
    }

    private mutating func handle(_ event: OggFramerEvent, _ emit: (OggStreamEvent) -> Void) {
        switch event {
        case .skipped(let position, let count):
            emit(.skipped(position: position, count: count))
        case .page(let page, let position):
            let role = links.read(page)
            switch role {
            case .header, .linkStarted:
                // The BOS page of the link being read, not one of a stream beside it (Skeleton's).
                if page.isBeginningOfStream { linkStartPosition = position }
            default:
                break
            }
            switch role {
            case .header, .ignored:
                break
            case .unsupported(let codec):
                emit(.unsupported(codec))
            case .malformed(let reason):
                emit(.malformed(reason))
            case .linkStarted(let link):
                emit(.linkStarted(link, position: linkStartPosition))
                var offset = linkStartPosition
                for (index, bytes) in link.headerPages.enumerated() {
                    let header = OggPageHeader(link: link, kind: .header, isLinkStart: index == 0, pageLength: bytes.count,
                                               granulePosition: 0, samples: 0)
                    emit(.packet(Packet(bytes: bytes[...], position: offset, header: .oggPage(header))))
                    offset += bytes.count
                }
                lastGranule = nil
                firstAudioSequence = page.sequenceNumber &+ 1
            case .audio(let link):
                let samples = samples(endingAt: page, sampleRate: link.info.sampleRate)
                let header = OggPageHeader(link: link, kind: .audio, isLinkStart: false, isLinkEnd: page.isEndOfStream,
                                           continuesPacket: page.flags.contains(.continued), pageLength: page.bytes.count,
                                           granulePosition: page.granulePosition, samples: samples)
                emit(.packet(Packet(bytes: page.bytes, position: position, header: .oggPage(header))))
            }
        }
    }

    private mutating func samples(endingAt page: OggPage, sampleRate: Int) -> Int {
        let granule = page.granulePosition
        guard granule >= 0 else { return 0 }
        defer { lastGranule = granule }
        // The link's first audio page counts from 0; one heard mid-link (a listener's join) has
        // no known start and counts as nothing.
        let previous = lastGranule ?? (page.sequenceNumber == firstAudioSequence ? 0 : granule)
        let delta = granule - previous
        return (0...Self.maxSecondsPerPage * Int64(sampleRate)).contains(delta) ? Int(delta) : 0
    }
}
