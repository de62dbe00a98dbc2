import ICYWire

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
struct HLSPlaylistParser {
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
            readVariant(value, lineNumber: lineNumber)
        case "#EXT-X-MEDIA":
            readRendition(value)
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
            try readMap(value, malformed: malformed())
        case "#EXT-X-KEY":
            try readKey(value, malformed: malformed())
        default:
            break
        }
    }

    /// `#EXT-X-STREAM-INF`: a variant, whose URI is the next URI line.
    private mutating func readVariant(_ value: Substring, lineNumber: Int) {
        let attributes = HLSAttributeList(value)
        let variant = HLSVariant(
            uri: "", bandwidth: attributes.integer("BANDWIDTH") ?? 0,
            averageBandwidth: attributes.integer("AVERAGE-BANDWIDTH"),
            codecs: attributes["CODECS"].map { $0.split(separator: ",").map { trimmed($0) }.filter { !$0.isEmpty } } ?? [],
            resolution: attributes["RESOLUTION"], audioGroup: attributes["AUDIO"])
        pendingVariant = (variant, lineNumber)
    }

    /// `#EXT-X-MEDIA`: only audio renditions with their own URI matter.
    private mutating func readRendition(_ value: Substring) {
        let attributes = HLSAttributeList(value)
        if attributes["TYPE"] == "AUDIO", let uri = attributes["URI"], let group = attributes["GROUP-ID"] {
            master.audioRenditions.append(HLSRendition(
                groupID: group, name: attributes["NAME"] ?? "", uri: resolve(uri), isDefault: attributes["DEFAULT"] == "YES"))
        }
    }

    /// `#EXT-X-MAP`: the initialization segment of every following segment.
    private mutating func readMap(_ value: Substring, malformed: HLSPlaylistError) throws(HLSPlaylistError) {
        let attributes = HLSAttributeList(value)
        guard let uri = attributes["URI"] else { throw malformed }
        let range = attributes["BYTERANGE"].map { Self.byteRange($0[...], defaultOffset: 0) }
        if case .some(.none) = range { throw malformed }
        map = HLSMap(uri: resolve(uri), byteRange: range ?? nil)
    }

    /// `#EXT-X-KEY`: how every following segment is encrypted.
    private mutating func readKey(_ value: Substring, malformed: HLSPlaylistError) throws(HLSPlaylistError) {
        let attributes = HLSAttributeList(value)
        switch attributes["METHOD"] {
        case "NONE":
            key = nil
        case "AES-128":
            guard let uri = attributes["URI"] else { throw malformed }
            let iv = attributes["IV"].map { _ in attributes.hexBytes("IV", byteCount: 16) }
            if case .some(.none) = iv { throw malformed }
            key = HLSKey(method: .aes128, uri: resolve(uri), iv: iv ?? nil)
        case let other?:
            key = HLSKey(method: .unsupported(String(other.prefix(32))), uri: attributes["URI"].map(resolve) ?? "", iv: nil)
        case nil:
            throw malformed
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
