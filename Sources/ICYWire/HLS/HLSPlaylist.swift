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
    package var audioRenditions: [HLSRendition] = []

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
package struct HLSRendition: Sendable, Hashable {
    package var groupID: String
    package var name: String
    package var uri: String
    package var isDefault: Bool
}

package enum HLSPlaylistType: String, Sendable, Hashable {
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
    package var playlistType: HLSPlaylistType?
    /// `#EXT-X-ENDLIST`: no segment will be added.
    package var hasEndList: Bool
    package var segments: [HLSSegment]

    /// The sequence number after the last segment.
    package var endSequence: Int { mediaSequence + segments.count }
}

/// Lines of a playlist, bounded before any line becomes a String.
enum HLSLines {
    struct Line {
        let number: Int
        let text: String
    }

    static func split(_ bytes: some Collection<UInt8>, limits: HLSPlaylistLimits) throws(HLSPlaylistError) -> [Line] {
        var lines: [Line] = []
        var current: [UInt8] = []
        var number = 1
        var skipBOM = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        func flush() throws(HLSPlaylistError) {
            if current.last == 0x0D { current.removeLast() }
            let text = trimmed(Substring(String(decoding: current, as: UTF8.self)))
            if !text.isEmpty {
                guard lines.count < limits.maxLines else { throw .tooManyLines(limit: limits.maxLines) }
                lines.append(Line(number: number, text: text))
            }
            current.removeAll(keepingCapacity: true)
        }
        for byte in bytes {
            if skipBOM > 0 {
                skipBOM -= 1
                continue
            }
            if byte == 0x0A {
                try flush()
                number += 1
                // Blank lines count too: 100,000 empty lines cost time even if they make no Line.
                guard number <= limits.maxLines * 2 else { throw .tooManyLines(limit: limits.maxLines) }
            } else {
                guard current.count < limits.maxLineLength else { throw .lineTooLong(line: number, limit: limits.maxLineLength) }
                current.append(byte)
            }
        }
        try flush()
        return lines
    }
}

/// Reads a playlist's lines in order, carrying what tags say about the next segment.
private struct HLSPlaylistParser {
    let baseURL: String
    let limits: HLSPlaylistLimits

    var master = HLSMasterPlaylist()
    var pendingVariant: (HLSVariant, line: Int)?
    var sawMediaTag = false

    var targetDuration: Int?
    var mediaSequence = 0
    var discontinuitySequence = 0
    var playlistType: HLSPlaylistType?
    var hasEndList = false
    var segments: [HLSSegment] = []

    // Carried to the next segment only.
    var pendingDuration: Double?
    var pendingTitle: HLSSegmentTitle?
    var pendingDiscontinuity = false
    var pendingDateTime: Double?
    var pendingByteRange: HLSByteRange?
    // Carried to every following segment.
    var key: HLSKey?
    var map: HLSMap?
    var lastByteRangeEnd = 0

    init(baseURL: String, limits: HLSPlaylistLimits) {
        self.baseURL = baseURL
        self.limits = limits
    }

    mutating func read(_ line: String, lineNumber: Int) throws(HLSPlaylistError) {
        guard line.hasPrefix("#") else {
            try readURI(line, lineNumber: lineNumber)
            return
        }
        guard line.hasPrefix("#EXT") else { return }
        let colon = line.firstIndex(of: ":")
        let tag = colon.map { String(line[..<$0]) } ?? line
        let value = colon.map { line[line.index(after: $0)...] } ?? ""
        func malformed() -> HLSPlaylistError { .malformed(line: lineNumber, tag: tag) }

        switch tag {
        case "#EXT-X-STREAM-INF":
            let attributes = HLSAttributeList(value)
            let variant = HLSVariant(
                uri: "", bandwidth: attributes.integer("BANDWIDTH") ?? 0,
                averageBandwidth: attributes.integer("AVERAGE-BANDWIDTH"),
                codecs: attributes["CODECS"].map { $0.split(separator: ",").map { trimmed($0) }.filter { !$0.isEmpty } } ?? [],
                resolution: attributes["RESOLUTION"], audioGroup: attributes["AUDIO"])
            pendingVariant = (variant, lineNumber)
        case "#EXT-X-MEDIA":
            let attributes = HLSAttributeList(value)
            if attributes["TYPE"] == "AUDIO", let uri = attributes["URI"], let group = attributes["GROUP-ID"] {
                master.audioRenditions.append(HLSRendition(
                    groupID: group, name: attributes["NAME"] ?? "", uri: resolve(uri), isDefault: attributes["DEFAULT"] == "YES"))
            }
        case "#EXTINF":
            sawMediaTag = true
            let comma = value.firstIndex(of: ",")
            let durationText = comma.map { value[..<$0] } ?? value
            guard let duration = Double(trimmed(durationText)), duration.isFinite, duration >= 0 else { throw malformed() }
            pendingDuration = duration
            pendingTitle = comma.flatMap { HLSSegmentTitle(extinfText: value[value.index(after: $0)...]) }
        case "#EXT-X-TARGETDURATION":
            sawMediaTag = true
            guard let seconds = Self.decimalInteger(value) else { throw malformed() }
            targetDuration = seconds
        case "#EXT-X-MEDIA-SEQUENCE":
            sawMediaTag = true
            guard let sequence = Self.decimalInteger(value) else { throw malformed() }
            mediaSequence = sequence
        case "#EXT-X-DISCONTINUITY-SEQUENCE":
            guard let sequence = Self.decimalInteger(value) else { throw malformed() }
            discontinuitySequence = sequence
        case "#EXT-X-DISCONTINUITY":
            pendingDiscontinuity = true
        case "#EXT-X-PROGRAM-DATE-TIME":
            pendingDateTime = ProgramDateTime.secondsSince1970(trimmed(value[...]))
        case "#EXT-X-ENDLIST":
            sawMediaTag = true
            hasEndList = true
        case "#EXT-X-PLAYLIST-TYPE":
            playlistType = HLSPlaylistType(rawValue: trimmed(value[...]))
        case "#EXT-X-BYTERANGE":
            guard let range = Self.byteRange(value, defaultOffset: lastByteRangeEnd) else { throw malformed() }
            pendingByteRange = range
        case "#EXT-X-MAP":
            let attributes = HLSAttributeList(value)
            guard let uri = attributes["URI"] else { throw malformed() }
            let range = attributes["BYTERANGE"].map { Self.byteRange($0[...], defaultOffset: 0) }
            if case .some(.none) = range { throw malformed() }
            map = HLSMap(uri: resolve(uri), byteRange: range ?? nil)
        case "#EXT-X-KEY":
            let attributes = HLSAttributeList(value)
            switch attributes["METHOD"] {
            case "NONE":
                key = nil
            case "AES-128":
                guard let uri = attributes["URI"] else { throw malformed() }
                let iv = attributes["IV"].map { _ in attributes.hexBytes("IV", byteCount: 16) }
                if case .some(.none) = iv { throw malformed() }
                key = HLSKey(method: .aes128, uri: resolve(uri), iv: iv ?? nil)
            case let other?:
                key = HLSKey(method: .unsupported(String(other.prefix(32))), uri: attributes["URI"].map(resolve) ?? "", iv: nil)
            case nil:
                throw malformed()
            }
        default:
            break
        }
    }

    private mutating func readURI(_ line: String, lineNumber: Int) throws(HLSPlaylistError) {
        if var (variant, _) = pendingVariant {
            variant.uri = resolve(line)
            master.variants.append(variant)
            pendingVariant = nil
            return
        }
        guard let duration = pendingDuration else { return }  // a URI without #EXTINF is not a segment
        guard segments.count < limits.maxSegments else { throw .tooManySegments(limit: limits.maxSegments) }
        segments.append(HLSSegment(
            uri: resolve(line), sequence: mediaSequence &+ segments.count, duration: duration, title: pendingTitle,
            isDiscontinuity: pendingDiscontinuity, programDateTime: pendingDateTime, byteRange: pendingByteRange,
            key: key, map: map))
        if let range = pendingByteRange { lastByteRangeEnd = range.offset &+ range.length }
        pendingDuration = nil
        pendingTitle = nil
        pendingDiscontinuity = false
        pendingDateTime = nil
        pendingByteRange = nil
    }

    func finish() throws(HLSPlaylistError) -> HLSPlaylist {
        if let pendingVariant { throw .variantWithoutURI(line: pendingVariant.line) }
        if !master.variants.isEmpty {
            guard !sawMediaTag else { throw .masterAndMedia }
            return .master(master)
        }
        guard sawMediaTag else { throw .empty }
        guard let targetDuration else { throw .missingTargetDuration }
        // Numbered here, not as segments are read: a MEDIA-SEQUENCE tag after the first segment
        // (against RFC 8216 4.3.3.2) still numbers them all.
        var segments = segments
        for index in segments.indices { segments[index].sequence = mediaSequence + index }
        return .media(HLSMediaPlaylist(
            targetDuration: targetDuration, mediaSequence: mediaSequence, discontinuitySequence: discontinuitySequence,
            playlistType: playlistType, hasEndList: hasEndList, segments: segments))
    }

    /// A URI resolves against the playlist's own URL, which a redirect can make long: each is
    /// bounded like a line, so a playlist of 20,000 one-letter URIs cannot make gigabytes of them.
    private func resolve(_ uri: String) -> String {
        let resolved = Playlist.resolve(uri, against: baseURL)
        return resolved.utf8.count <= limits.maxLineLength ? resolved : ""
    }

    /// RFC 8216 decimal-integer: 0 to 2^64-1; anything past Int's range is as hostile as malformed.
    private static func decimalInteger(_ text: Substring) -> Int? {
        let digits = trimmed(text)
        guard !digits.isEmpty, digits.utf8.count <= 18, digits.allSatisfy(\.isASCIIDigit) else { return nil }
        return Int(digits)
    }

    /// `n[@o]`; without `@o` the range starts where the previous one ended.
    /// No real resource is a terabyte; bounding offset plus length keeps every sum a request
    /// makes of them far from overflowing.
    static let maxByteRangeEnd = 1 << 40

    private static func byteRange(_ text: Substring, defaultOffset: Int) -> HLSByteRange? {
        let parts = text.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        guard let length = decimalInteger(parts[0]) else { return nil }
        var offset = defaultOffset
        if parts.count == 2 {
            guard let stated = decimalInteger(parts[1]) else { return nil }
            offset = stated
        }
        guard length <= maxByteRangeEnd, offset <= maxByteRangeEnd - length else { return nil }
        return HLSByteRange(length: length, offset: offset)
    }
}

/// `#EXT-X-PROGRAM-DATE-TIME` values: ISO 8601 `YYYY-MM-DDThh:mm:ss[.fff](Z|+hh:mm|-hh:mm|+hhmm)`.
enum ProgramDateTime {
    /// Seconds since 1970-01-01T00:00:00Z, or nil when the text is not such a date.
    static func secondsSince1970(_ text: String) -> Double? {
        let bytes = Array(text.utf8.prefix(64))
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard bytes.count >= 19, bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54 || bytes[10] == 0x74,
              bytes[13] == 0x3A, bytes[16] == 0x3A,
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < bytes.count, bytes[index] == 0x2E {
            index += 1
            var scale = 0.1
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
        }
        var offsetSeconds = 0
        if index < bytes.count {
            switch bytes[index] {
            case 0x5A, 0x7A:
                index += 1
            case 0x2B, 0x2D:
                let sign = bytes[index] == 0x2B ? 1 : -1
                guard let hours = number(index + 1..<index + 3) else { return nil }
                var minutesStart = index + 3
                if minutesStart < bytes.count, bytes[minutesStart] == 0x3A { minutesStart += 1 }
                guard let minutes = number(minutesStart..<minutesStart + 2) else { return nil }
                offsetSeconds = sign * (hours * 3600 + minutes * 60)
                index = minutesStart + 2
            default:
                return nil
            }
        }
        guard index == bytes.count else { return nil }
        let days = daysSince1970(year: year, month: month, day: day)
        return Double(days * 86400 + hour * 3600 + minute * 60 + second - offsetSeconds) + fraction
    }

    /// Howard Hinnant's days-from-civil.
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146097 + dayOfEra - 719468
    }
}
