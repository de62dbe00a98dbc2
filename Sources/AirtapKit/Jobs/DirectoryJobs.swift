import AirtapStations
import AirtapSupport
import CurlSource
import FoundationEssentials
import ICYWire

/// What `search` asks the directory: `/json/stations/search`, broken stations hidden, the most
/// listened first.
package struct DirectoryQuery: Sendable, Hashable {
    /// Part of the station's name.
    package var name: String?
    package var tag: String?
    /// A two-letter code (`FI`) is a country code; anything longer a country's name.
    package var country: String?
    package var codec: String?
    package var limit = 20

    package static let maxLimit = 500

    package init(name: String? = nil, tag: String? = nil, country: String? = nil, codec: String? = nil, limit: Int = 20) {
        self.name = name
        self.tag = tag
        self.country = country
        self.codec = codec
        self.limit = limit
    }

    /// The request's path and query, every value percent-encoded.
    package var pathAndQuery: String {
        var items: [(String, String)] = []
        if let name, !name.isEmpty { items.append(("name", name)) }
        if let tag, !tag.isEmpty { items.append(("tag", tag)) }
        if let country, !country.isEmpty {
            items.append(country.count == 2 ? ("countrycode", country.uppercased()) : ("country", country))
        }
        if let codec, !codec.isEmpty { items.append(("codec", codec)) }
        items += [("limit", String(limit)), ("hidebroken", "true"), ("order", "clickcount"), ("reverse", "true")]
        return "/json/stations/search?" + items.map { "\($0.0)=\(Self.percentEncoded($0.1))" }.joined(separator: "&")
    }

    /// RFC 3986: everything but the unreserved characters as `%XX` of its UTF-8 bytes.
    static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-._~".unicodeScalars.contains(scalar) {
                result.unicodeScalars.append(scalar)
            } else {
                result += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return result
    }
}

/// How `search` and `add --from-directory` reach the directory.
package struct DirectoryPlan: Sendable, Hashable {
    /// `--directory URL`; nil: `AIRTAP_DIRECTORY`, else the public directory.
    package var directory: String?
    /// `--timeout`: per server and request.
    package var timeLimit: Double = 15

    package init(directory: String? = nil, timeLimit: Double = 15) {
        self.directory = directory
        self.timeLimit = timeLimit
    }

    func client(loop: CurlMultiLoop, environment: [String: String]) throws(AirtapError) -> DirectoryClient {
        var client = DirectoryClient(servers: try DirectoryServers.choose(commandLine: directory, environment: environment), loop: loop)
        client.timeLimit = timeLimit
        return client
    }
}

/// `search` and `add --from-directory`: plan in, stations (or a stations.json entry) out.
package enum DirectoryJobs {
    package static func search(_ query: DirectoryQuery, plan: DirectoryPlan,
                               environment: [String: String] = ProcessInfo.processInfo.environment) async throws(AirtapError) -> [DirectoryStation] {
        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        // The limit is the user's, not only the server's to honour.
        return Array(try await plan.client(loop: loop, environment: environment).stations(query.pathAndQuery).prefix(query.limit))
    }

    /// The directory's station `uuid`, added to the stations file at `path` as `id`; the
    /// station as added.
    package static func add(id: String, uuid: String, plan: DirectoryPlan, toFileAt path: String,
                            environment: [String: String] = ProcessInfo.processInfo.environment) async throws(AirtapError) -> DirectoryEntry {
        let wanted = uuid.lowercased()
        guard Station.isDirectoryUUID(wanted) else {
            throw .usage("--from-directory: '\(uuid)' is not a station uuid (8-4-4-4-12 hex digits, as search shows)")
        }
        if let problem = Station.problem(withID: id) { throw .usage(problem) }
        let loop = try CurlMultiLoop.forCommand()
        defer { loop.shutdown() }
        let found = try await plan.client(loop: loop, environment: environment).stations("/json/stations/byuuid/\(wanted)")
        guard let station = found.first(where: { $0.uuid == wanted }) else {
            throw .configuration("the station directory has no station \(wanted)")
        }
        let entry = try DirectoryEntry(station)
        try StationCatalog.add(id: id, name: entry.name, urls: [entry.url], extra: entry.extraKeys, toFileAt: path)
        return entry
    }
}

/// A directory station as stations.json keeps it: its text made plain (one line, no control or
/// invisible characters, bounded), and only an http(s) stream.
package struct DirectoryEntry: Sendable, Hashable {
    package let uuid: String
    package let name: String?
    package let url: String
    package let genre: String?
    package let homepage: String?

    package init(_ station: DirectoryStation) throws(AirtapError) {
        guard let url = station.streamURL else {
            let shown = station.givenStreamURL.map { "'\(String($0.prefix(200)))'" } ?? "none"
            throw .configuration("the directory's stream URL for \(station.uuid) is not an http or https URL: \(shown)")
        }
        uuid = station.uuid
        self.url = url
        name = Station.name(fromICYName: station.name)
        genre = Station.name(fromICYName: station.tags.joined(separator: ", "))
        homepage = station.homepage.flatMap { Station.isStreamURL($0) ? $0 : nil }
    }

    /// What `add` prints: `added ID (NAME, URL) to PATH`, the directory's text inert.
    package func addedLine(id: String, path: String) -> String {
        "added \(id) (\(InertText.render(name ?? id, maxUTF8Bytes: 80)), \(InertText.render(url, maxUTF8Bytes: 200))) to \(path)"
    }

    /// The keys beside id, name and url.
    var extraKeys: [(key: String, value: String)] {
        var keys: [(key: String, value: String)] = []
        if let genre { keys.append(("genre", genre)) }
        if let homepage { keys.append(("homepage", homepage)) }
        keys.append(("directoryUuid", uuid))
        return keys
    }
}
