import AirtapSupport
import FoundationEssentials
import ICYWire

/// The stations a user has defined in stations.json.
package struct StationCatalog: Sendable {
    package let stations: [Station]
    /// Where the list came from; nil when no file was found.
    package let source: String?
    /// What the file has that airtap does not read (a misspelt key), one line each, for the
    /// command to print: `stations[2]: unknown key "chrset" (did you mean "charset"?)`.
    package let warnings: [String]
    /// `"library"`: nil when the file does not mention it (the library's work is off).
    package let library: LibrarySetting?

    private struct File: Decodable {
        let stations: [Station]
        let library: LibrarySetting?
    }

    package init(stations: [Station], source: String?, warnings: [String] = [], library: LibrarySetting? = nil) {
        self.stations = stations
        self.source = source
        self.warnings = warnings
        self.library = library
    }

    /// Where stations.json is looked for, in order, when `--stations` is not given.
    package static func searchPaths(environment: [String: String] = ProcessInfo.processInfo.environment,
                                   currentDirectory: String = FileManager.default.currentDirectoryPath) -> [String] {
        var paths = [currentDirectory + "/stations.json"]
        if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
            paths.append(config + "/airtap/stations.json")
        }
        if let home = environment["HOME"], !home.isEmpty {
            paths.append(home + "/.config/airtap/stations.json")
        }
        return paths
    }

    /// The one message every command gives when it needs stations.json and there is none.
    package static func noFileMessage(searchPaths paths: [String] = searchPaths()) -> String {
        "no stations.json found (looked in \(paths.joined(separator: ", "))); 'airtap add ID URL' creates one"
    }

    /// Loads the explicit file, or the first file of the search path; no file at all is an empty list.
    package static func load(explicitPath: String?) throws(AirtapError) -> StationCatalog {
        if let explicitPath {
            guard let data = try readFile(explicitPath) else {
                throw .configuration("cannot read stations file \(explicitPath)")
            }
            return try parse(data, source: explicitPath)
        }
        for path in searchPaths() {
            if let data = try readFile(path) { return try parse(data, source: path) }
        }
        return StationCatalog(stations: [], source: nil)
    }

    /// The largest stations.json read: a thousand stations take about 150 KiB.
    package static let maxFileBytes = 16 << 20

    /// The stations file at `path`, read at most `maxFileBytes`; nil when it cannot be read
    /// (missing, a folder, no permission). Larger is an error of its own.
    static func readFile(_ path: String) throws(AirtapError) -> Data? {
        do {
            return try BoundedFileRead.contents(of: path, limit: maxFileBytes)
        } catch .tooLarge {
            throw .configuration("stations file \(path) is larger than \(BoundedFileRead.describe(maxFileBytes))")
        } catch {
            return nil
        }
    }

    package static func parse(_ data: Data, source: String) throws(AirtapError) -> StationCatalog {
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch let error as DecodingError {
            throw .configuration("\(source): \(describe(error, in: data))")
        } catch {
            throw .configuration("\(source): not a valid stations file")
        }
        var seen = Set<String>()
        for station in file.stations {
            guard seen.insert(station.id).inserted else {
                throw .configuration("\(source): station id '\(station.id)' is defined twice")
            }
        }
        let warnings = ((try? JSONDecoder().decode(KeyScan.self, from: data))?.unknownKeys ?? []).map { "\(source): \($0)" }
        let folder = URL(fileURLWithPath: source).standardizedFileURL.deletingLastPathComponent().path
        let stations = file.stations.map { station in
            var station = station
            station.listFolder = folder
            return station
        }
        return StationCatalog(stations: stations, source: source, warnings: warnings,
                              library: file.library?.resolvingPath(from: folder))
    }

    /// The keys of stations.json, read a second time to find the ones no decoder asked for
    /// (JSONDecoder ignores them silently, and a misspelt "chrset" would garble titles unseen).
    private struct KeyScan: Decodable {
        let unknownKeys: [String]

        init(from decoder: any Decoder) throws {
            let top = try decoder.container(keyedBy: AnyKey.self)
            var unknown = Self.unknown(top.allKeys, known: ["stations", "library"], at: "")
            if let library = try? top.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("library")) {
                unknown += Self.unknown(library.allKeys, known: LibrarySetting.keys, at: "library")
            }
            var list = try top.nestedUnkeyedContainer(forKey: AnyKey("stations"))
            var index = 0
            while !list.isAtEnd {
                let path = "stations[\(index)]"
                let station = try list.nestedContainer(keyedBy: AnyKey.self)
                unknown += Self.unknown(station.allKeys, known: Station.knownKeys, at: path)
                if station.contains(AnyKey("schedule")) {
                    let schedule = try station.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey("schedule"))
                    // Station.Schedule's stored properties.
                    unknown += Self.unknown(schedule.allKeys, known: ["cron", "duration"], at: path + ".schedule")
                }
                index += 1
            }
            unknownKeys = unknown
        }

        private static func unknown(_ keys: [AnyKey], known: [String], at path: String) -> [String] {
            keys.map(\.stringValue).filter { !known.contains($0) }.sorted().map { key in
                let place = path.isEmpty ? "" : "\(path): "
                let suggestion = Suggestion.closest(to: key, among: known).map { " (did you mean \"\($0)\"?)" } ?? ""
                return "\(place)unknown key \"\(key)\"\(suggestion), ignored"
            }
        }
    }

    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// A station id from the list, a URL (http, https), a local playlist, or a local stream
    /// (`LocalStream`: `-`, a file URL, an audio file's path).
    package func resolve(_ stationOrURL: String) throws(AirtapError) -> Station {
        if !stations.contains(where: { $0.id == stationOrURL }), let local = try LocalStream.parse(stationOrURL) {
            return Station(localStream: local)
        }
        if stationOrURL.contains("://") {
            guard let scheme = URLComponents(string: stationOrURL)?.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
                throw .usage("'\(stationOrURL)' is not an http or https URL")
            }
            return Station(adHocURL: stationOrURL)
        }
        if !stations.contains(where: { $0.id == stationOrURL }), Self.looksLikePlaylistFile(stationOrURL) {
            return try Self.stationFromPlaylistFile(stationOrURL)
        }
        guard let station = stations.first(where: { $0.id == stationOrURL }) else {
            if source == nil { throw .configuration("unknown station '\(stationOrURL)': \(Self.noFileMessage())") }
            throw .unknownStation(stationOrURL, known: stations.map(\.id))
        }
        return station
    }

    /// What `play` tunes to: a station id puts the whole list on the dial, at that station; a
    /// URL or a playlist file is a dial of one.
    package func dial(_ stationOrURL: String) throws(AirtapError) -> StationDial {
        let station = try resolve(stationOrURL)
        return stations.firstIndex(of: station).flatMap { StationDial(stations: stations, index: $0) } ?? StationDial(station: station)
    }

    // MARK: Local playlists

    /// An absolute http or https URL with a host: what a station's URL must be.
    package static func isStreamURL(_ text: String) -> Bool { Station.isStreamURL(text) }

    /// The largest local .pls/.m3u read: real ones are a few hundred bytes.
    static let maxPlaylistFileBytes = 256 * 1024

    /// A path (not an id) to a local playlist: it ends in .pls/.m3u/.m3u8, or names a file.
    static func looksLikePlaylistFile(_ argument: String) -> Bool {
        let lowered = argument.lowercased()
        if [".pls", ".m3u", ".m3u8"].contains(where: { lowered.hasSuffix($0) }) { return true }
        return argument.contains("/") && FileManager.default.fileExists(atPath: argument)
    }

    /// A station from a local .pls or .m3u (as mpv takes them): its http(s) entries in order,
    /// the later ones as fallbacks.
    package static func stationFromPlaylistFile(_ path: String) throws(AirtapError) -> Station {
        // Bounded: a path can name anything, /dev/zero or a sparse file of gigabytes included.
        let data: Data
        do {
            data = try BoundedFileRead.contents(of: path, limit: maxPlaylistFileBytes)
        } catch {
            switch error {
            case .tooLarge: throw .playlist(url: path, reason: "larger than \(BoundedFileRead.describe(maxPlaylistFileBytes))")
            case .missing: throw .localIO("cannot read playlist \(path)")
            case .unreadable(let reason): throw .localIO("cannot read playlist \(path): \(reason)")
            }
        }
        let text = TextDecoding.decode(data, fallback: .cp1252)
        let entries: [String]
        do {
            entries = try Playlist.entries(in: text, format: Playlist.format(forURL: path), baseURL: nil)
        } catch {
            switch error {
            case .isSegmentedStream: throw .playlist(url: path, reason: "an HLS playlist on disk cannot be followed; give its http(s) URL")
            case .noEntries: throw .playlist(url: path, reason: "no stream URLs in it")
            }
        }
        let urls = entries.filter(Station.isStreamURL)
        guard let first = urls.first else {
            throw .playlist(url: path, reason: "no http or https stream in it")
        }
        var station = Station(adHocURL: first)
        station.urls = urls
        return station
    }

    // MARK: Error positions

    private static func describe(_ error: DecodingError, in data: Data) -> String {
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            guard let position = syntaxErrorPosition(in: data) else {
                // Well-formed JSON that JSONDecoder still calls invalid: it says so (without a
                // path) for a number that fits no Swift number type.
                return "a number is out of range, or has a fraction where a whole number goes"
            }
            return "not valid JSON at line \(position.line), column \(position.column)"
        case .dataCorrupted(let context):
            return "\(path(context.codingPath)): \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            let detail = context.debugDescription.hasPrefix("a station") ? context.debugDescription : "missing \"\(key.stringValue)\""
            return "\(path(context.codingPath)): \(detail)"
        case .typeMismatch(_, let context) where context.codingPath.isEmpty:
            return "the top level must be an object: { \"stations\": [ ... ] }"
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): expected \(typeName(type))"
        @unknown default:
            return "not a valid stations file"
        }
    }

    private static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue { text += "[\(index)]" } else { text += text.isEmpty ? key.stringValue : ".\(key.stringValue)" }
        }
        return text.isEmpty ? "top level" : text
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is [String].Type: "a list of strings"
        case is [String: String].Type: "an object of strings"
        case is Int.Type: "a whole number"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        case is LibrarySetting.Type: "true, false or an object with \"path\", \"replaygain\", \"dedupe\""
        default:
            // Never a Swift type name ("Dictionary<String, Any>") in front of a user.
            switch String(describing: type) {
            case let name where name.hasPrefix("Dictionary"): "an object"
            case let name where name.hasPrefix("Array"): "a list"
            default: "a different kind of value"
            }
        }
    }

    /// The line and column (in characters) of the first byte that is not JSON.
    private static func syntaxErrorPosition(in data: Data) -> (line: Int, column: Int)? {
        guard let offset = JSONSyntax.firstErrorOffset(in: data) else { return nil }
        var line = 1, column = 1
        for byte in data.prefix(offset) {
            if byte == UInt8(ascii: "\n") { line += 1; column = 1 } else if byte & 0xC0 != 0x80 { column += 1 }
        }
        return (line, column)
    }
}
