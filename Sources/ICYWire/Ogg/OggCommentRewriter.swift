/// Rewrites the comment header of the link a file starts with (station, date, genre, track
/// number added to the link's own comments) and keeps the file a valid Ogg stream: the comment
/// and setup packets are laid out on new pages, and every later page of the link is renumbered
/// when the header now takes a different number of pages.
///
/// Pages go in one at a time as they arrive; each comes back as what to write instead.
package struct OggCommentRewriter: Sendable {
    package enum Output: Sendable {
        /// Write the page as it is.
        case unchanged
        /// A header page, held until the link's headers are complete.
        case held
        /// Write these bytes instead (the rewritten header pages, or a renumbered page).
        case replaced([UInt8])
    }

    /// Replace fields of these keys, or add them.
    private let fields: [VorbisComments.Field]
    private var reader = OggLinkReader()
    private var serialNumber: UInt32?
    /// New sequence number minus old, for the pages after the headers.
    private var sequenceShift: Int64 = 0
    private var isPassingThrough = false

    package init(fields: [VorbisComments.Field]) {
        self.fields = fields
    }

    package mutating func rewrite(_ bytes: ArraySlice<UInt8>) -> Output {
        guard !isPassingThrough, case .page(let page) = OggPage.parse(bytes) else { return .unchanged }
        if let serialNumber {
            guard page.serialNumber == serialNumber, sequenceShift != 0 else { return .unchanged }
            let sequence = Int64(page.sequenceNumber) + sequenceShift
            return .replaced(page.renumbered(to: UInt32(truncatingIfNeeded: sequence)))
        }
        switch reader.read(page) {
        case .header:
            return .held
        case .linkStarted(let link):
            serialNumber = link.serialNumber
            var comments = link.comments
            let keys = Set(fields.map(\.key))
            comments.fields.removeAll { keys.contains($0.key) }
            comments.fields += fields
            let packets = [comments.packet(for: link.info.codec)] + link.headerPackets.dropFirst(2)
            // The identification packet keeps its own first page, as both codecs require.
            let rest = OggPaginator.pages(for: packets, serialNumber: link.serialNumber, firstSequenceNumber: 1,
                                          firstFlags: [], granulePosition: 0)
            sequenceShift = Int64(1 + rest.count) - Int64(link.headerPages.count)
            return .replaced(link.headerPages[0] + rest.joined())
        default:
            // Not the start of a link (a file opened mid-link): nothing to rewrite.
            isPassingThrough = true
            return .unchanged
        }
    }
}
