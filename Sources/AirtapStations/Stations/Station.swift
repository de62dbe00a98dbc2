import AirtapSupport
import FoundationEssentials
import ICYWire

/// One entry of stations.json, or an ad-hoc station made from a URL on the command line.
package struct Station: Sendable, Hashable, Codable {
    package var id: String
    package var name: String
    /// Tried in order: the first is the main stream, the rest are fallbacks.
    package var urls: [String]
    /// The charset of titles that are not valid UTF-8 (default windows-1252).
    package var charset: String?
    package var userAgent: String?
    package var headers: [String: String]?
    /// Output folder or template for recordings, relative to the output directory.
    package var output: String?
    package var schedule: Schedule?
    /// Seconds to move every title change by before the silence search (stations.json:
    /// `splitOffsetMs`): positive when this station's titles come early, negative when late.
    /// `--split-offset` overrides it.
    package var splitOffset: Double?
    /// How long after its song this station's titles arrive (stations.json: `titleDelay`,
    /// seconds, `"auto"` or `"off"`); nil: learned (`auto`). `--title-delay` overrides it.
    package var titleDelay: TitleDelaySetting?
    /// Keep and skip lists (stations.json: `keep_only`, `skip`), as written: a relative path is
    /// relative to `listFolder`. `--keep-only` and `--skip` override them.
    package var keepOnly: String?
    package var skip: String?
    /// HLS: the best variant at or under this many kbps (stations.json: `maxBitrateKbps`).
    /// `--max-bitrate` overrides it.
    package var maxBitrateKbps: Int?
    /// Re-encode the stream as MP3 (stations.json: `transcode`, `"mp3:128k"`) where it is served
    /// or recorded. `--transcode` overrides it.
    package var transcode: TranscodeSetting?
    /// What the station plays and its web page, as the station directory lists them
    /// (stations.json: `genre`, `homepage`); kept for the user, not sent anywhere.
    package var genre: String?
    package var homepage: String?
    /// The station directory's id for the station (stations.json: `directoryUuid`, set by
    /// `add --from-directory`): starting it counts a click there, at most once a day.
    package var directoryUUID: String?
    /// The folder of the stations.json the station came from (relative list paths start there);
    /// nil for a station made on the command line. Never read from or written to stations.json.
    package var listFolder: String?
    /// A station given as a bare URL: its folder and album take the stream's `icy-name` when it
    /// sends one (`name` is the id until then). Never read from or written to stations.json.
    package var isNamedByStream = false

    package struct Schedule: Sendable, Hashable, Codable {
        /// A five-field cron expression: when to start recording.
        package var cron: String
        /// How long to record, as `2h`, `90m`...
        package var duration: String

        package init(cron: String, duration: String) {
            self.cron = cron
            self.duration = duration
        }
    }

    package init(id: String, name: String, urls: [String], charset: String? = nil, userAgent: String? = nil,
                headers: [String: String]? = nil, output: String? = nil, schedule: Schedule? = nil) {
        self.id = id
        self.name = name
        self.urls = urls
        self.charset = charset
        self.userAgent = userAgent
        self.headers = headers
        self.output = output
        self.schedule = schedule
    }

    /// A station for a URL given on the command line, named after its URL until its stream
    /// says its own name (`isNamedByStream`): see `id(forURL:)`.
    package init(adHocURL url: String) {
        let id = Self.id(forURL: url)
        self.init(id: id, name: id, urls: [url])
        isNamedByStream = true
    }

    /// The id of a bare URL, `ice1.somafm.com-groovesalad-128-mp3-1a2b3c4d`: its host, port and
    /// path as a readable slug (ASCII letters, digits, `.`, `_` and `-`, at most 80 bytes), then
    /// eight hex digits of FNV-1a over the URL without its credentials and fragment. The query
    /// counts in the hash only: it often holds a listener token (`?sid=`, `?key=`), which must not
    /// reach folder, lock file and metric names. Two
    /// streams on one host get two ids (two locks, two mounts, two folders until icy-name names
    /// them), and one URL gets the same id on every run and machine. Never a reserved id: it
    /// always ends in the hash.
    package static func id(forURL url: String) -> String {
        let components = URLComponents(string: url)
        let host = components?.host?.lowercased() ?? ""
        let port = components?.port.map { ":\($0)" } ?? ""
        let query = components?.percentEncodedQuery.map { "?" + $0 } ?? ""
        let hashed = components.map { "\($0.scheme?.lowercased() ?? "")://\(host)\(port)\($0.percentEncodedPath)\(query)" } ?? url
        let readable = [host, String(port.dropFirst()), components?.path ?? ""].joined(separator: "-")
        return slug(readable, maxBytes: 80) + "-" + StableHash.shortHex(hashed)
    }

    /// `text` in ASCII letters, digits, `.` and `_`, every other run of characters one `-`,
    /// no `-` or `.` at either end; "station" when nothing is left.
    static func slug(_ text: String, maxBytes: Int) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            let kept = scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "." || scalar == "_")
            if kept {
                result.unicodeScalars.append(scalar)
            } else if !result.isEmpty, result.last != "-" {
                result += "-"
            }
            if result.utf8.count >= maxBytes { break }
        }
        var slug = Substring(result.prefix(maxBytes))
        while let last = slug.last, last == "-" || last == "." { slug.removeLast() }
        while let first = slug.first, first == "-" || first == "." { slug.removeFirst() }
        return slug.isEmpty ? "station" : String(slug)
    }

    /// The relay server's own paths (`RelayRoute`): a station with one of these ids would have
    /// a mount nobody can reach.
    package static let reservedIDs: Set<String> = ["stream", "status", "status.json", "status-json.xsl", "metrics", "listen.pls", "listen.m3u"]

    /// The longest id, in UTF-8 bytes: ids name lock files (cut at 200 bytes), so two longer ids
    /// could share one.
    package static let maxIDBytes = 200

    /// Why `id` cannot name a station, or nil when it can. An id is the mount path `/<id>` of
    /// `serve`, part of a lock file's name, and typed on command lines: it must be reachable,
    /// must not shadow or be shadowed by the server's own paths, and must be one line.
    package static func problem(withID id: String) -> String? {
        if id.isEmpty { return "a station id must not be empty" }
        if id == "." || id == ".." { return "station id '\(id)' cannot be a mount path (clients read /\(id) as a folder)" }
        if id.unicodeScalars.contains(where: { $0.properties.generalCategory.isControlOrFormat }) {
            return "station id '\(id)' holds control or invisible characters"
        }
        if id.hasPrefix(";") { return "station id '\(id)' starts with ';', which serve reads as the SHOUTcast stream path /;" }
        if reservedIDs.contains(id) { return "station id '\(id)' is the relay server's own path /\(id)" }
        if id.utf8.count > maxIDBytes { return "station id '\(id.prefix(40))…' is longer than \(maxIDBytes) bytes" }
        return nil
    }

    /// The name a bare-URL station takes from its stream's `icy-name`: one line of plain text,
    /// at most 200 characters; nil when the station sends none (or nothing printable).
    /// Station text: the one call site for the shared sanitizer of station text.
    package static func name(fromICYName icyName: String?) -> String? {
        guard let icyName else { return nil }
        let printable = icyName.unicodeScalars.filter { !$0.properties.generalCategory.isControlOrFormat }
        var text = Substring(String(String.UnicodeScalarView(printable)))
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        guard !text.isEmpty else { return nil }
        return String(text.prefix(200))
    }

    /// The fallback charset for titles that are not UTF-8.
    package var titleCharset: TextCharset {
        charset.flatMap(TextCharset.init(name:)) ?? .cp1252
    }

    /// How titles that are not UTF-8 are decoded: a built-in code page, or any charset glibc's
    /// iconv knows (CP1252 for bytes that are not valid in it).
    package var titleDecoding: TitleDecoding {
        guard let charset, TextCharset(name: charset) == nil, let iconv = IconvDecoder(charset: charset) else {
            return TitleDecoding(fallback: titleCharset)
        }
        return TitleDecoding(fallback: .cp1252, custom: iconv)
    }

    /// The keys stations.json may give a station; anything else gets a warning.
    static var knownKeys: [String] { CodingKeys.allCases.map(\.stringValue) }

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case id, name, url, urls, charset, userAgent, headers, output, schedule
        case splitOffset = "splitOffsetMs"
        case titleDelay
        case keepOnly = "keep_only", skip
        case maxBitrateKbps
        case transcode
        case genre, homepage
        case directoryUUID = "directoryUuid"
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        if let problem = Self.problem(withID: id) {
            throw DecodingError.dataCorruptedError(forKey: .id, in: container, debugDescription: problem + "; pick another id")
        }
        name = try container.decodeIfPresent(String.self, forKey: .name) ?? id
        urls = try Self.decodeURLs(container)
        charset = try container.decodeIfPresent(String.self, forKey: .charset)
        if let charset, TextCharset(name: charset) == nil, IconvDecoder(charset: charset) == nil {
            // Silently falling back would garble every title of the station.
            throw DecodingError.dataCorruptedError(forKey: .charset, in: container, debugDescription:
                "unknown charset '\(charset)' (any name 'iconv --list' shows works: utf-8, windows-1252, koi8-r, shift_jis, ...)")
        }
        userAgent = try container.decodeIfPresent(String.self, forKey: .userAgent)
        headers = try container.decodeIfPresent([String: String].self, forKey: .headers)
        output = try container.decodeIfPresent(String.self, forKey: .output)
        schedule = try container.decodeIfPresent(Schedule.self, forKey: .schedule)
        splitOffset = try Self.decodeSplitOffset(container)
        titleDelay = try Self.decodeTitleDelay(container)
        maxBitrateKbps = try container.decodeIfPresent(Int.self, forKey: .maxBitrateKbps)
        if let maxBitrateKbps, maxBitrateKbps <= 0 {
            throw DecodingError.dataCorruptedError(forKey: .maxBitrateKbps, in: container, debugDescription: "maxBitrateKbps must be a positive number")
        }
        if let text = try container.decodeIfPresent(String.self, forKey: .transcode) {
            guard let setting = TranscodeSetting(parsing: text) else {
                throw DecodingError.dataCorruptedError(forKey: .transcode, in: container,
                                                       debugDescription: "transcode " + TranscodeSetting.problem(with: text))
            }
            transcode = setting
        }
        genre = try container.decodeIfPresent(String.self, forKey: .genre)
        homepage = try container.decodeIfPresent(String.self, forKey: .homepage)
        directoryUUID = try container.decodeIfPresent(String.self, forKey: .directoryUUID)
        if let directoryUUID, !Self.isDirectoryUUID(directoryUUID) {
            throw DecodingError.dataCorruptedError(forKey: .directoryUUID, in: container,
                                                   debugDescription: "'\(directoryUUID)' is not a station directory uuid")
        }
        keepOnly = try container.decodeIfPresent(String.self, forKey: .keepOnly)
        skip = try container.decodeIfPresent(String.self, forKey: .skip)
        for (key, path) in [(CodingKeys.keepOnly, keepOnly), (.skip, skip)] where path?.isEmpty == true {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "\(key.stringValue) must be a file's path")
        }
    }

    private typealias DecodingContainer = KeyedDecodingContainer<CodingKeys>

    /// `url` first, then `urls`; at least one, each an http or https URL.
    private static func decodeURLs(_ container: DecodingContainer) throws -> [String] {
        let single = try container.decodeIfPresent(String.self, forKey: .url)
        let several = try container.decodeIfPresent([String].self, forKey: .urls) ?? []
        let urls = (single.map { [$0] } ?? []) + several
        guard !urls.isEmpty else {
            throw DecodingError.keyNotFound(CodingKeys.url, .init(codingPath: container.codingPath, debugDescription: "a station needs \"url\" or \"urls\""))
        }
        // Refused when the file loads, not hours later when a schedule first plays it.
        for (index, url) in urls.enumerated() where !Self.isStreamURL(url) {
            let key: [any CodingKey] = single != nil && index == 0 ? [CodingKeys.url] : [CodingKeys.urls, IndexKey(index - (single == nil ? 0 : 1))]
            throw DecodingError.dataCorrupted(.init(codingPath: container.codingPath + key,
                                                    debugDescription: "'\(url)' is not an http or https URL"))
        }
        return urls
    }

    private static func decodeSplitOffset(_ container: DecodingContainer) throws -> Double? {
        // Whole milliseconds, like --split-offset; within a minute, like --split-offset.
        if let milliseconds = try container.decodeIfPresent(Int.self, forKey: .splitOffset) {
            guard abs(milliseconds) <= 60_000 else {
                throw DecodingError.dataCorruptedError(forKey: .splitOffset, in: container,
                                                       debugDescription: "splitOffsetMs must be within ±60000")
            }
            return Double(milliseconds) / 1000
        }
        return nil
    }

    /// Seconds, or "auto" or "off"; anything else (an array, an object) is refused by the same line.
    private static func decodeTitleDelay(_ container: DecodingContainer) throws -> TitleDelaySetting? {
        let refusal = DecodingError.dataCorruptedError(forKey: .titleDelay, in: container,
                                                       debugDescription: "titleDelay takes seconds, \"auto\" or \"off\"")
        if let seconds = try? container.decodeIfPresent(Double.self, forKey: .titleDelay) {
            guard abs(seconds) <= TitleDelaySetting.maximumSeconds else {
                throw DecodingError.dataCorruptedError(forKey: .titleDelay, in: container,
                                                       debugDescription: "titleDelay must be within ±\(Int(TitleDelaySetting.maximumSeconds)) seconds")
            }
            return .fixed(seconds)
        }
        guard let text = try? container.decodeIfPresent(String.self, forKey: .titleDelay) else {
            if container.contains(.titleDelay), (try? container.decodeNil(forKey: .titleDelay)) != true { throw refusal }
            return nil
        }
        guard let setting = try? TitleDelaySetting.parse(text) else { throw refusal }
        return setting
    }

    /// A list path of this station as the recorder opens it.
    package func resolvedListPath(_ path: String) -> String {
        guard !path.hasPrefix("/"), let listFolder else { return path }
        return listFolder + "/" + path
    }

    /// An absolute http or https URL with a host, and no control characters: curl refuses a URL
    /// with a line break or an escape, so one is refused here, where it is written, not when
    /// the station first plays.
    package static func isStreamURL(_ text: String) -> Bool {
        guard !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }), let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else { return false }
        return ["http", "https"].contains(scheme) && !(components.host ?? "").isEmpty
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        if urls.count == 1 { try container.encode(urls[0], forKey: .url) } else { try container.encode(urls, forKey: .urls) }
        try container.encodeIfPresent(charset, forKey: .charset)
        try container.encodeIfPresent(userAgent, forKey: .userAgent)
        try container.encodeIfPresent(headers, forKey: .headers)
        try container.encodeIfPresent(output, forKey: .output)
        try container.encodeIfPresent(schedule, forKey: .schedule)
        try container.encodeIfPresent(splitOffset.map { Int(($0 * 1000).rounded()) }, forKey: .splitOffset)
        switch titleDelay {
        case .fixed(let seconds): try container.encode(seconds, forKey: .titleDelay)
        case .off: try container.encode("off", forKey: .titleDelay)
        case .auto, nil: break
        }
        try container.encodeIfPresent(keepOnly, forKey: .keepOnly)
        try container.encodeIfPresent(skip, forKey: .skip)
        try container.encodeIfPresent(maxBitrateKbps, forKey: .maxBitrateKbps)
        try container.encodeIfPresent(transcode?.description, forKey: .transcode)
        try container.encodeIfPresent(genre, forKey: .genre)
        try container.encodeIfPresent(homepage, forKey: .homepage)
        try container.encodeIfPresent(directoryUUID, forKey: .directoryUUID)
    }
}

/// An array position in a coding path ("urls[1]").
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "\(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { nil }
}

extension Unicode.GeneralCategory {
    /// Controls and invisible format characters (bidi overrides): nothing a name should hold.
    fileprivate var isControlOrFormat: Bool { self == .control || self == .format }
}

extension Station {
    /// A directory uuid, `8-4-4-4-12` hex digits: the only form that goes into a request path
    /// or a file name.
    package static func isDirectoryUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return false }
        return groups.allSatisfy { $0.unicodeScalars.allSatisfy { $0.isASCII && $0.properties.isASCIIHexDigit } }
    }
}
