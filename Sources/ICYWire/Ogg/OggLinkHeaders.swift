/// The header pages of the Ogg link now streaming, in order: what a listener who joins (the
/// relay server) or a connection that resumes (the Icecast push) must get before the link's
/// audio, since a decoder cannot start a link without them. One value for every sink that
/// needs them; bounded, since a station decides how large its headers claim to be.
package struct OggLinkHeaders: Sendable {
    package static let maxBytes = 1 << 20

    package private(set) var pages: [[UInt8]] = []
    package private(set) var byteCount = 0

    package init() {}

    package var isEmpty: Bool { pages.isEmpty }

    /// A header page as it arrives; one that starts a link replaces the last link's. A page past
    /// the bound is left out (a listener then gets an incomplete link, never unbounded memory).
    package mutating func add(_ page: some Collection<UInt8>, startsLink: Bool) {
        if startsLink { removeAll() }
        guard byteCount + page.count <= Self.maxBytes else { return }
        pages.append(Array(page))
        byteCount += page.count
    }

    package mutating func removeAll() {
        pages.removeAll(keepingCapacity: true)
        byteCount = 0
    }
}
