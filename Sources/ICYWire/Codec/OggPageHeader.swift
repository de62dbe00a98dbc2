/// What a `Packet` of an Ogg stream is: one whole page (the unit Ogg players resync on and
/// Icecast sends to listeners), with its link's audio format and where it sits in the link.
/// Sinks that only copy bytes (files, relays) stay codec-agnostic: a link's header pages come
/// first, so a file or a listener that starts at `isLinkStart` can be decoded from there.
package struct OggPageHeader: Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        /// Carries the link's identification, comment or setup header; no audio.
        case header
        case audio
    }

    package let codec: OggCodec
    package let sampleRate: Int
    package let channels: Int
    package let nominalBitrate: Int?
    /// Counts the links of one connection from 0.
    package let linkNumber: Int
    package let kind: Kind
    /// The link's first header page (its BOS page): where a file or a listener may start.
    package let isLinkStart: Bool
    /// The link's EOS page: a file that ends here holds the whole link.
    package let isLinkEnd: Bool
    /// The page continues a packet begun on the page before: a decoder cannot start here.
    package let continuesPacket: Bool
    package let pageLength: Int
    /// The page's granule position (-1: no packet ends on it).
    package let granulePosition: Int64
    /// Samples (at `sampleRate`) this page completes: its granule position minus the last one
    /// seen in the link; 0 for header pages and for the first audio page heard mid-link.
    package let samples: Int

    package init(codec: OggCodec, sampleRate: Int, channels: Int, nominalBitrate: Int?, linkNumber: Int, kind: Kind,
                isLinkStart: Bool, isLinkEnd: Bool = false, continuesPacket: Bool = false, pageLength: Int,
                granulePosition: Int64, samples: Int) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.nominalBitrate = nominalBitrate
        self.linkNumber = linkNumber
        self.kind = kind
        self.isLinkStart = isLinkStart
        self.isLinkEnd = isLinkEnd
        self.continuesPacket = continuesPacket
        self.pageLength = pageLength
        self.granulePosition = granulePosition
        self.samples = samples
    }
}
