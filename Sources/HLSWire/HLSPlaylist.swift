import ICYWire

/// Why an m3u8 text is not a playlist airtap can follow.
package enum HLSPlaylistError: Error, Sendable, Hashable {
    /// The first line is not `#EXTM3U` (an HTML error page, a plain M3U).
    case notM3U8
    case tooManyLines(limit: Int)
    case lineTooLong(line: Int, limit: Int)
    case tooManySegments(limit: Int)
    /// A media playlist without `#EXT-X-TARGETDURATION` (RFC 8216 4.3.3.1: required).
    case missingTargetDuration
    /// `#EXT-X-STREAM-INF` and `#EXTINF` in one file.
    case masterAndMedia
    /// A master playlist whose variants have no URI, or a media playlist with no tag at all.
    case empty
    /// `#EXT-X-STREAM-INF` not followed by a URI line.
    case variantWithoutURI(line: Int)
    /// A tag whose value cannot be read (`#EXTINF:abc`, `#EXT-X-TARGETDURATION:-1`).
    case malformed(line: Int, tag: String)
}

/// Bounds for a playlist from a stranger, checked before anything is allocated per line.
package struct HLSPlaylistLimits: Sendable, Hashable {
    package var maxLines: Int
    package var maxLineLength: Int
    package var maxSegments: Int

    /// A live playlist has tens of lines; a long VOD (a day of 6 s segments) about 30,000.
    package init(maxLines: Int = 50_000, maxLineLength: Int = 8192, maxSegments: Int = 20_000) {
        self.maxLines = maxLines
        self.maxLineLength = maxLineLength
        self.maxSegments = maxSegments
    }
}

/// A parsed `.m3u8`: either a master playlist (variants) or a media playlist (segments).
package enum HLSPlaylist: Sendable, Hashable {
    case master(HLSMasterPlaylist)
    case media(HLSMediaPlaylist)

    /// Reads the playlist's bytes; relative URIs resolve against `baseURL` (the URL the playlist
    /// was finally fetched from, after redirects). Lines may end in LF or CR LF; a UTF-8 BOM is
    /// skipped. Unknown tags and comments are ignored, as RFC 8216 section 4.1 requires.
    package static func parse(_ bytes: some Collection<UInt8>, baseURL: String, limits: HLSPlaylistLimits = HLSPlaylistLimits())
        throws(HLSPlaylistError) -> HLSPlaylist
    {
        let lines = try HLSLines.split(bytes, limits: limits)
        guard let first = lines.first, first.text == "#EXTM3U" else { throw .notM3U8 }
        var parser = HLSPlaylistParser(baseURL: baseURL, limits: limits)
        for line in lines.dropFirst() {
            try parser.read(line.text, lineNumber: line.number)
        }
        return try parser.finish()
    }
}

/// `#EXT-X-STREAM-INF` variants (and `#EXT-X-MEDIA` audio renditions) of a master playlist.
package struct HLSMasterPlaylist: Sendable, Hashable {
    package var variants: [HLSVariant] = []
    var audioRenditions: [HLSRendition] = []

    /// The variant to play: among the audio-only variants (all of them when none is), the one of
    /// highest bandwidth at or under `maxBitrate` (bits per second), or the highest of all when
    /// `maxBitrate` is nil; when every variant is over the limit, the lowest (hls.js and ffmpeg
    /// also play something rather than nothing). Ties keep playlist order.
    package func chooseVariant(maxBitrate: Int? = nil) -> HLSVariant? {
        rankedVariants(maxBitrate: maxBitrate).first
    }

    /// Every variant, best first by `chooseVariant`'s rule: the audio-only ones before the others;
    /// within each, those at or under `maxBitrate` from the highest bandwidth down, then those
    /// over it from the lowest up. Ties keep playlist order. What to fall back to when the
    /// best fails.
    package func rankedVariants(maxBitrate: Int? = nil) -> [HLSVariant] {
        func ranked(_ group: [HLSVariant]) -> [HLSVariant] {
            let fitting = group.filter { variant in maxBitrate.map { variant.bandwidth <= $0 } ?? true }
            let over = group.filter { variant in maxBitrate.map { variant.bandwidth > $0 } ?? false }
            return stableSorted(fitting) { $0.bandwidth > $1.bandwidth } + stableSorted(over) { $0.bandwidth < $1.bandwidth }
        }
        return ranked(variants.filter(\.isAudioOnly)) + ranked(variants.filter { !$0.isAudioOnly })
    }

    private func stableSorted(_ variants: [HLSVariant], by before: (HLSVariant, HLSVariant) -> Bool) -> [HLSVariant] {
        variants.enumerated().sorted { before($0.element, $1.element) || (!before($1.element, $0.element) && $0.offset < $1.offset) }
            .map(\.element)
    }
}

package struct HLSVariant: Sendable, Hashable {
    package var uri: String
    /// Peak bits per second (required by the RFC; 0 when a playlist leaves it out).
    package var bandwidth: Int
    package var averageBandwidth: Int?
    /// RFC 6381 codec strings, e.g. `mp4a.40.2` (AAC LC), `mp4a.40.5` (HE-AAC), `mp4a.40.34` (MP3).
    package var codecs: [String]
    package var resolution: String?
    /// The `AUDIO` group whose renditions carry this variant's sound, if any.
    package var audioGroup: String?

    /// No video codec listed and no resolution: an audio stream.
    package var isAudioOnly: Bool {
        resolution == nil && !codecs.contains { codec in
            let family = codec.prefix { $0 != "." }.lowercased()
            return ["avc1", "avc3", "hvc1", "hev1", "vp09", "av01", "dvh1", "dvhe", "mp4v"].contains(family)
        }
    }
}

/// An `#EXT-X-MEDIA:TYPE=AUDIO` rendition with its own playlist.
struct HLSRendition: Sendable, Hashable {
    var groupID: String
    var name: String
    var uri: String
    var isDefault: Bool
}

enum HLSPlaylistType: String, Sendable, Hashable {
    /// Segments are only appended; the playlist ends with ENDLIST some day.
    case event = "EVENT"
    /// The playlist never changes.
    case vod = "VOD"
}

/// `#EXT-X-KEY`: how the segments after it are encrypted.
package struct HLSKey: Sendable, Hashable {
    package enum Method: Sendable, Hashable {
        case aes128
        /// SAMPLE-AES and vendors' DRM methods: nothing airtap can decrypt.
        case unsupported(String)
    }

    package var method: Method
    package var uri: String
    /// 16 bytes when the tag gives one; otherwise the segment's media sequence number is the IV.
    package var iv: [UInt8]?

    /// The IV for the segment of sequence number `sequence` (RFC 8216 5.2): the tag's, or the
    /// sequence number as a 128-bit big-endian integer.
    package func initializationVector(forSequence sequence: Int) -> [UInt8] {
        if let iv { return iv }
        let value = UInt64(truncatingIfNeeded: sequence)
        return [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }
}

/// `#EXT-X-MAP`: the initialization section (fMP4's `moov`) the segments after it need.
package struct HLSMap: Sendable, Hashable {
    package var uri: String
    package var byteRange: HLSByteRange?
}

/// `length@offset`: part of a resource, in bytes.
package struct HLSByteRange: Sendable, Hashable {
    package var length: Int
    package var offset: Int
}

/// A title a playlist gives a segment in its `#EXTINF` line.
package struct HLSSegmentTitle: Sendable, Hashable {
    package var artist: String?
    package var title: String

    /// The text after `#EXTINF:duration,`: either attributes (`title="...",artist="..."`, the
    /// form iHeart's packagers write, with `\"` inside values) or `Artist - Title`. Nil when
    /// there is no title (an empty text, a packager's placeholder, or attributes without a
    /// non-empty title or artist).
    package init?(extinfText text: Substring) {
        let text = trimmed(text)
        guard !text.isEmpty, !Self.isPlaceholder(text) else { return nil }
        if let attributes = Self.quotedAttributes(text[...]), attributes.contains(where: { $0.name == "title" || $0.name == "artist" }) {
            let title = attributes.first { $0.name == "title" }?.value ?? ""
            let artist = attributes.first { $0.name == "artist" }?.value
            guard !title.isEmpty || !(artist ?? "").isEmpty else { return nil }
            self.artist = (artist ?? "").isEmpty ? nil : artist
            self.title = title
            return
        }
        let info = TrackInfo(streamTitle: text)
        self.artist = info.artist
        self.title = info.title
    }

    /// Texts packagers write where a title would go when they have none: Unified Streaming
    /// (used by large broadcasters) writes `#EXTINF:6.4, no desc` on every segment.
    private static let placeholders: Set<String> = ["no desc"]

    private static func isPlaceholder(_ text: String) -> Bool {
        placeholders.contains(text.lowercased())
    }

    /// The title as a stream title, `Artist - Title` (or the title alone).
    package var streamTitle: String {
        guard let artist else { return title }
        return title.isEmpty ? artist : "\(artist) - \(title)"
    }

    /// `key="value",key="value"` with backslash escapes inside values; nil when the text is not
    /// entirely in that form.
    private static func quotedAttributes(_ text: Substring) -> [(name: String, value: String)]? {
        var result: [(name: String, value: String)] = []
        var rest = text
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," }
            if rest.isEmpty { break }
            guard let equals = rest.firstIndex(of: "="),
                  rest[..<equals].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }),
                  rest.index(after: equals) < rest.endIndex, rest[rest.index(after: equals)] == "\""
            else { return nil }
            let name = String(rest[..<equals]).lowercased()
            var value = ""
            var index = rest.index(equals, offsetBy: 2)
            var closed = false
            while index < rest.endIndex {
                let character = rest[index]
                if character == "\\", rest.index(after: index) < rest.endIndex {
                    index = rest.index(after: index)
                    value.append(rest[index])
                } else if character == "\"" {
                    closed = true
                    break
                } else {
                    value.append(character)
                }
                index = rest.index(after: index)
            }
            guard closed else { return nil }
            result.append((name, value))
            rest = rest[rest.index(after: index)...]
            guard rest.isEmpty || rest.first == "," || rest.first == " " else { return nil }
        }
        return result.isEmpty ? nil : result
    }
}

/// One segment of a media playlist, with everything the tags before it said about it.
package struct HLSSegment: Sendable, Hashable {
    package var uri: String
    /// Its media sequence number: the playlist's `#EXT-X-MEDIA-SEQUENCE` plus its index.
    package var sequence: Int
    /// Seconds, from `#EXTINF`.
    package var duration: Double
    package var title: HLSSegmentTitle?
    /// `#EXT-X-DISCONTINUITY` came before it: timestamps, format or encoder may change here.
    package var isDiscontinuity: Bool
    /// `#EXT-X-PROGRAM-DATE-TIME` of its first sample, seconds since 1970, if given for it.
    package var programDateTime: Double?
    package var byteRange: HLSByteRange?
    package var key: HLSKey?
    package var map: HLSMap?
}

package struct HLSMediaPlaylist: Sendable, Hashable {
    /// Seconds, `#EXT-X-TARGETDURATION` as written (clamping is the tracker's business).
    package var targetDuration: Int
    package var mediaSequence: Int
    package var discontinuitySequence: Int
    var playlistType: HLSPlaylistType?
    /// `#EXT-X-ENDLIST`: no segment will be added.
    package var hasEndList: Bool
    package var segments: [HLSSegment]

    /// The sequence number after the last segment.
    package var endSequence: Int { mediaSequence + segments.count }
}
