import FoundationEssentials

/// One station as the station directory (radio-browser's API) lists it, reduced to what airtap
/// shows or keeps. Everything in it is a stranger's text: each string is cut to a bound when it
/// is decoded, and made inert where it is shown (`DirectoryTable`), never here.
package struct DirectoryStation: Sendable, Hashable {
    /// `stationuuid`: the directory's id for the station.
    package var uuid: String
    package var name: String
    /// `url`: as its owner entered it (it may be a playlist).
    package var url: String?
    /// `url_resolved`: the stream the directory's checker found behind `url`.
    package var urlResolved: String?
    package var homepage: String?
    package var tags: [String]
    package var country: String?
    package var countryCode: String?
    package var codec: String?
    package var bitrateKbps: Int?
    package var isHLS: Bool
    /// Whether the directory's last check found it working.
    package var lastCheckOK: Bool?
    package var clickCount: Int?
    package var votes: Int?

    package init(uuid: String, name: String, url: String? = nil, urlResolved: String? = nil, homepage: String? = nil,
                 tags: [String] = [], country: String? = nil, countryCode: String? = nil, codec: String? = nil,
                 bitrateKbps: Int? = nil, isHLS: Bool = false, lastCheckOK: Bool? = nil, clickCount: Int? = nil, votes: Int? = nil) {
        self.uuid = uuid
        self.name = name
        self.url = url
        self.urlResolved = urlResolved
        self.homepage = homepage
        self.tags = tags
        self.country = country
        self.countryCode = countryCode
        self.codec = codec
        self.bitrateKbps = bitrateKbps
        self.isHLS = isHLS
        self.lastCheckOK = lastCheckOK
        self.clickCount = clickCount
        self.votes = votes
    }

    /// The longest string field kept (a URL, a name), in UTF-8 bytes: a bound in characters
    /// would not hold, since one character can carry any number of combining marks.
    static let maxFieldBytes = 1024
    /// Tags kept per station, and the UTF-8 bytes of each.
    static let maxTags = 32
    static let maxTagBytes = 64

    /// `text` cut to at most `maxBytes` of UTF-8, between two scalars.
    static func cut(_ text: some StringProtocol, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return String(text) }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > maxBytes { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    /// The stream to add: `url_resolved`, else `url`, the first that is an absolute http(s) URL
    /// (a checker's `javascript:` or `data:` result does not hide a good `url`).
    package var streamURL: String? {
        [urlResolved, url].compactMap { $0 }.first(where: Station.isStreamURL)
    }

    /// What the directory gave as the stream, usable or not: for saying why it is refused.
    package var givenStreamURL: String? {
        [urlResolved, url].compactMap { $0 }.first { !$0.isEmpty }
    }
}

/// Why a directory's answer is not a list of stations.
package enum DirectoryAnswerError: Error, Sendable, Hashable, CustomStringConvertible {
    case notJSON
    /// JSON, but not a list of objects (an error page's object, a number).
    case notAList

    package var description: String {
        switch self {
        case .notJSON: "the answer is not JSON"
        case .notAList: "the answer is not a list of stations"
        }
    }
}

extension DirectoryStation {
    /// The stations of a `/json/stations/...` answer. Entries that are not station objects, or
    /// have no valid `stationuuid`, are left out; fields of the wrong type count as missing, and
    /// fields airtap does not read are ignored.
    package static func list(from bytes: [UInt8]) throws(DirectoryAnswerError) -> [DirectoryStation] {
        do {
            return try JSONDecoder().decode([Entry].self, from: Data(bytes)).compactMap(\.station)
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty { throw .notJSON }
            throw .notAList
        } catch {
            throw .notJSON
        }
    }

    /// One element of the list: a station, or nil for anything else.
    private struct Entry: Decodable {
        let station: DirectoryStation?

        init(from decoder: any Decoder) throws {
            guard let fields = try? decoder.container(keyedBy: Key.self) else {
                station = nil
                return
            }
            station = DirectoryStation(fields)
        }
    }

    private enum Key: String, CodingKey {
        case stationuuid, name, url, url_resolved, homepage, tags, country, countrycode, codec, bitrate, hls
        case lastcheckok, clickcount, votes
    }

    private init?(_ fields: KeyedDecodingContainer<Key>) {
        func text(_ key: Key) -> String? {
            guard let value = try? fields.decodeIfPresent(String.self, forKey: key) else { return nil }
            return Self.cut(value, maxBytes: Self.maxFieldBytes)
        }
        func number(_ key: Key) -> Int? {
            if let value = try? fields.decodeIfPresent(Int.self, forKey: key) { return value }
            return text(key).flatMap { Int($0) }
        }
        func flag(_ key: Key) -> Bool? {
            if let value = try? fields.decodeIfPresent(Bool.self, forKey: key) { return value }
            return number(key).map { $0 != 0 }
        }
        guard let uuid = text(.stationuuid), Station.isDirectoryUUID(uuid) else { return nil }
        let tags = (text(.tags) ?? "").split(separator: ",")
            .map { Self.cut($0.trimmingSpacesAndNewlines(), maxBytes: Self.maxTagBytes) }
            .filter { !$0.isEmpty }
        self.init(uuid: uuid.lowercased(), name: text(.name) ?? "", url: text(.url), urlResolved: text(.url_resolved),
                  homepage: text(.homepage), tags: Array(tags.prefix(Self.maxTags)), country: text(.country),
                  countryCode: text(.countrycode), codec: text(.codec), bitrateKbps: number(.bitrate),
                  isHLS: flag(.hls) ?? false, lastCheckOK: flag(.lastcheckok), clickCount: number(.clickcount),
                  votes: number(.votes))
    }
}
