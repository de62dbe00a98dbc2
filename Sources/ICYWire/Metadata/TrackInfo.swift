/// A StreamTitle read as "Artist - Title", the convention nearly every station follows.
package struct TrackInfo: Sendable, Hashable {
    /// The StreamTitle as received.
    package let raw: String
    package let artist: String?
    package let title: String
    package let url: String?

    /// Splits at the first " - " or " – " (en dash) and trims both sides. Without a separator
    /// the artist is `nil` and the title is the whole trimmed text; an empty artist is `nil`.
    package init(streamTitle: String, url: String? = nil) {
        self.raw = streamTitle
        self.url = url
        let separator = [streamTitle.firstRange(of: " - "), streamTitle.firstRange(of: " – ")]
            .compactMap { $0 }
            .min { $0.lowerBound < $1.lowerBound }
        if let separator {
            let artist = trimmed(streamTitle[..<separator.lowerBound])
            self.artist = artist.isEmpty ? nil : artist
            self.title = trimmed(streamTitle[separator.upperBound...])
        } else {
            self.artist = nil
            self.title = trimmed(streamTitle[...])
        }
    }

    package init(_ metadata: StreamMetadata) {
        self.init(streamTitle: metadata.streamTitle ?? "", url: metadata.streamURL)
    }
}
