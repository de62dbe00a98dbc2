import FoundationEssentials

/// The stations a user has defined in stations.json.
public struct StationCatalog: Sendable {
    public let stations: [Station]
    /// Where the list came from; nil when no file was found.
    public let source: String?

    private struct File: Decodable {
        let stations: [Station]
    }

    public init(stations: [Station], source: String?) {
        self.stations = stations
        self.source = source
    }

    /// Where stations.json is looked for, in order, when `--stations` is not given.
    public static func searchPaths(environment: [String: String] = ProcessInfo.processInfo.environment,
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
    public static func noFileMessage(searchPaths paths: [String] = searchPaths()) -> String {
        "no stations.json found (looked in \(paths.joined(separator: ", "))); 'airtap add ID URL' creates one"
    }

    /// Loads the explicit file, or the first file of the search path; no file at all is an empty list.
    public static func load(explicitPath: String?) throws(AirtapError) -> StationCatalog {
        if let explicitPath {
            guard let data = FileManager.default.contents(atPath: explicitPath) else {
                throw .configuration("cannot read stations file \(explicitPath)")
            }
            return try parse(data, source: explicitPath)
        }
        for path in searchPaths() {
            if let data = FileManager.default.contents(atPath: path) { return try parse(data, source: path) }
        }
        return StationCatalog(stations: [], source: nil)
    }

    public static func parse(_ data: Data, source: String) throws(AirtapError) -> StationCatalog {
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
        return StationCatalog(stations: file.stations, source: source)
    }

    /// A station id from the list, or a URL (http, https).
    public func resolve(_ stationOrURL: String) throws(AirtapError) -> Station {
        if stationOrURL.contains("://") {
            guard let scheme = URLComponents(string: stationOrURL)?.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
                throw .usage("'\(stationOrURL)' is not an http or https URL")
            }
            return Station(adHocURL: stationOrURL)
        }
        guard let station = stations.first(where: { $0.id == stationOrURL }) else {
            if source == nil { throw .configuration("unknown station '\(stationOrURL)': \(Self.noFileMessage())") }
            throw .unknownStation(stationOrURL, known: stations.map(\.id))
        }
        return station
    }

    // MARK: Error positions

    private static func describe(_ error: DecodingError, in data: Data) -> String {
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return "not valid JSON" + syntaxErrorPosition(in: data).map { " at line \($0.line), column \($0.column)" }.orEmpty
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

extension Optional where Wrapped == String {
    fileprivate var orEmpty: String { self ?? "" }
}
