/// One link of a chained Ogg stream: a logical bitstream from its BOS page on, with the
/// header pages a decoder or a new file needs before its audio.
package struct OggLink: Sendable, Hashable {
    /// 0 for the first link heard on a connection, counting up.
    package let number: Int
    package let serialNumber: UInt32
    package let info: OggAudioInfo
    package let comments: VorbisComments
    /// The header packets in order (identification, comments, and Vorbis's setup).
    package let headerPackets: [[UInt8]]
    /// The pages that carried them, as sent.
    package let headerPages: [[UInt8]]
}

/// What a page is to the reader of a chained stream.
package enum OggPageRole: Sendable {
    /// Part of a link's headers; the link is announced once they are complete.
    case header
    /// A link's headers are complete: it starts here (the page was its last header page).
    case linkStarted(OggLink)
    /// An audio page of this link.
    case audio(OggLink)
    /// A page that cannot be used: before any BOS (joined mid-link), of an unreadable link,
    /// interleaved from a second logical stream (a video track, say), or of a Skeleton stream
    /// beside the audio.
    case ignored
    /// A link in a codec airtap cannot read (FLAC in Ogg, Theora, Speex): permanent.
    case unsupported(OggCodec)
    /// Headers that are not well formed or larger than `maxHeaderBytes`.
    case malformed(String)
}

/// Follows the links of a chained Ogg stream page by page: a BOS page starts a link, its
/// header packets are gathered (bounded), and every later page of that serial is audio.
///
/// A Skeleton stream (its BOS page first in a group, its fisbone and EOS pages among the audio
/// link's headers) describes the streams beside it and holds no audio: its BOS page leaves the
/// reader as it was, and its later pages, of another serial than the audio link, are ignored
/// like any second logical stream's.
package struct OggLinkReader: Sendable {
    /// Header packets of one link may not add up to more than this (cover art in the comment
    /// header is the usual big one).
    package let maxHeaderBytes: Int

    private enum State: Sendable {
        /// Before the first BOS, or after an unreadable link: pages are ignored until a BOS.
        case waitingForLink
        case readingHeaders(HeaderAssembly)
        case streaming(OggLink)
    }

    private struct HeaderAssembly: Sendable {
        let serialNumber: UInt32
        let codec: OggCodec
        var packets: [[UInt8]] = []
        var partial: [UInt8] = []
        var pages: [[UInt8]] = []
        var byteCount = 0
    }

    private var state = State.waitingForLink
    package private(set) var linkCount = 0

    package init(maxHeaderBytes: Int = 1 << 20) {
        self.maxHeaderBytes = maxHeaderBytes
    }

    package var currentLink: OggLink? {
        if case .streaming(let link) = state { return link }
        return nil
    }

    package mutating func read(_ page: OggPage) -> OggPageRole {
        if page.isBeginningOfStream {
            if case .readingHeaders(let assembly) = state, assembly.serialNumber != page.serialNumber,
               assembly.pages.count == 1 {
                // Grouped BOS pages: a multiplexed stream (audio plus video). Keep the first.
                return .ignored
            }
            guard let first = page.packetPieces.first, first.isComplete else { return .malformed("a BOS page without a whole packet") }
            let codec = OggCodec(identificationPacket: first.bytes)
            if codec.isMetadataOnly { return .ignored }
            guard codec.headerPacketCount != nil else {
                state = .waitingForLink
                return .unsupported(codec)
            }
            state = .readingHeaders(HeaderAssembly(serialNumber: page.serialNumber, codec: codec))
        }
        switch state {
        case .waitingForLink:
            return .ignored
        case .streaming(let link):
            return page.serialNumber == link.serialNumber ? .audio(link) : .ignored
        case .readingHeaders(var assembly):
            guard page.serialNumber == assembly.serialNumber else { return .ignored }
            state = .waitingForLink
            assembly.byteCount += page.bytes.count
            guard assembly.byteCount <= maxHeaderBytes else { return .malformed("headers larger than \(maxHeaderBytes) bytes") }
            assembly.pages.append(Array(page.bytes))
            let needed = assembly.codec.headerPacketCount ?? 0
            for piece in page.packetPieces where assembly.packets.count < needed {
                assembly.partial.append(contentsOf: piece.bytes)
                if piece.isComplete {
                    assembly.packets.append(assembly.partial)
                    assembly.partial.removeAll()
                }
            }
            guard assembly.packets.count == needed else {
                state = .readingHeaders(assembly)
                return .header
            }
            guard let info = OggAudioInfo(identificationPacket: assembly.packets[0][...]) else {
                return .malformed("a \(assembly.codec.rawValue) identification header that is not well formed")
            }
            guard let comments = VorbisComments.parse(packet: assembly.packets[1][...], codec: assembly.codec) else {
                return .malformed("a \(assembly.codec.rawValue) comment header that is not well formed")
            }
            let link = OggLink(number: linkCount, serialNumber: assembly.serialNumber, info: info, comments: comments,
                               headerPackets: assembly.packets, headerPages: assembly.pages)
            linkCount += 1
            state = .streaming(link)
            return .linkStarted(link)
        }
    }
}

extension OggPageHeader {
    package init(link: OggLink, kind: Kind, isLinkStart: Bool, isLinkEnd: Bool = false, continuesPacket: Bool = false,
                pageLength: Int, granulePosition: Int64, samples: Int) {
        self.init(codec: link.info.codec, sampleRate: link.info.sampleRate, channels: link.info.channels,
                  nominalBitrate: link.info.nominalBitrate, linkNumber: link.number, kind: kind,
                  isLinkStart: isLinkStart, isLinkEnd: isLinkEnd, continuesPacket: continuesPacket, pageLength: pageLength,
                  granulePosition: granulePosition, samples: samples)
    }
}
