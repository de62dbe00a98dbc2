import AirtapKit
import AirtapSupport
import ICYWire
import NIOHTTP1

/// What the relay answers for a request line: a pure function, so routing is testable without sockets.
///
/// Each station is a mount, `/<id>`. `/stream`, `/listen.pls` and `/listen.m3u` are the first
/// station's (the only one, usually). `/` is the web page for a browser (or when there are
/// several stations) and the stream for a player. The server's own paths (`/status`,
/// `/status-json.xsl`, `/metrics`...) win over a station id spelled the same.
enum RelayRoute: Equatable {
    /// The stream of station `index` (in the order the stations were given).
    case stream(Int)
    case status
    /// Icecast's `/status-json.xsl`, for the tools that watch Icecast servers.
    case icestats
    /// Prometheus text format.
    case metrics
    case page
    case playlistPLS(Int)
    case playlistM3U(Int)
    /// The served library's page (`serve --library`), and an entry's file by its id: never a
    /// path, so nothing a client sends names a file.
    case recordings
    case recordingFile(Int64)
    case notFound
    case methodNotAllowed

    /// The path and query of a request target in absolute form (`http://host:port/path`, which
    /// HTTP/1.1 servers must accept, and proxies send): the host is this server whatever it says.
    static func originForm(_ uri: String) -> Substring {
        for scheme in ["http://", "https://"] where uri.utf8.count >= scheme.utf8.count
            && uri.utf8.prefix(scheme.utf8.count).map({ $0 | 0x20 }).elementsEqual(scheme.utf8) {
            let authorityAndPath = uri.dropFirst(scheme.count)
            return authorityAndPath.firstIndex(of: "/").map { authorityAndPath[$0...] } ?? "/"
        }
        return uri[...]
    }

    init(method: HTTPMethod, uri: String, stationIDs: [String], wantsPage: Bool = false, servesRecordings: Bool = false) {
        guard method == .GET || method == .HEAD else {
            self = .methodNotAllowed
            return
        }
        // Players append queries (`?type=.mp3`, cache busters) that mean nothing here.
        let rawPath = Self.originForm(uri).split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
        let path = Self.percentDecoded(rawPath) ?? rawPath
        switch path {
        case "/": self = wantsPage || stationIDs.count > 1 ? .page : .stream(0)
        case "/stream": self = .stream(0)
        // SHOUTcast v1 clients ask for `/;` (or `/;stream.mp3`) to get the stream.
        case _ where path.hasPrefix("/;"): self = .stream(0)
        case "/status", "/status.json": self = .status
        case "/status-json.xsl": self = .icestats
        case "/metrics": self = .metrics
        case "/listen.pls": self = .playlistPLS(0)
        case "/listen.m3u": self = .playlistM3U(0)
        case "/recordings" where servesRecordings: self = .recordings
        case _ where servesRecordings && path.hasPrefix("/recordings/file/"):
            let id = path.dropFirst("/recordings/file/".count)
            if !id.isEmpty, id.utf8.count <= 18, id.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let number = Int64(id) {
                self = .recordingFile(number)
            } else {
                self = .notFound
            }
        default:
            let name = path.dropFirst()
            if let index = stationIDs.firstIndex(where: { name == $0 }) {
                self = .stream(index)
            } else if name.hasSuffix(".pls"), let index = stationIDs.firstIndex(where: { name.dropLast(4) == $0 }) {
                self = .playlistPLS(index)
            } else if name.hasSuffix(".m3u"), let index = stationIDs.firstIndex(where: { name.dropLast(4) == $0 }) {
                self = .playlistM3U(index)
            } else {
                self = .notFound
            }
        }
    }

    /// `%XX` decoded, as browsers encode a station id with spaces in a link; nil when malformed.
    static func percentDecoded(_ text: String) -> String? {
        PercentDecoding.strict(text)
    }

    /// The value of `name` in the URI's query (`+` is a space, as forms send it); nil when absent or malformed.
    static func queryValue(_ name: String, in uri: String) -> String? {
        guard let query = uri.split(separator: "?", maxSplits: 1).dropFirst().first else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.first == Substring(name) else { continue }
            let raw = parts.count > 1 ? String(parts[1]).replacingEvery("+", with: " ") : ""
            return percentDecoded(raw)
        }
        return nil
    }
}

/// The bytes of the relay's answers: response heads, documents, playlists.
enum RelayResponses {
    /// What the stream's head says about it, from the upstream's head and frames.
    struct StreamDescription: Equatable {
        var contentType = "audio/mpeg"
        var name: String
        var genre: String?
        var url: String?
        var bitrate: Int?
    }

    /// `HTTP/1.0 200 OK` and the ICY fields; `icy-metaint` only for a client that asked for metadata.
    static func streamHead(_ stream: StreamDescription, metaint: Int?) -> String {
        var lines = [
            "HTTP/1.0 200 OK",
            "Content-Type: \(stream.contentType)",
            "icy-name: \(oneLine(stream.name))",
        ]
        if let genre = stream.genre { lines.append("icy-genre: \(oneLine(genre))") }
        if let bitrate = stream.bitrate { lines.append("icy-br: \(bitrate)") }
        if let url = stream.url { lines.append("icy-url: \(oneLine(url))") }
        if let metaint { lines.append("icy-metaint: \(metaint)") }
        lines += ["icy-pub: 0", "Server: \(AirtapVersion.userAgent)", "Cache-Control: no-cache, no-store", "Connection: close"]
        return lines.joined(separator: "\r\n") + "\r\n\r\n"
    }

    /// A complete non-stream answer; the connection closes after it.
    static func document(status: HTTPResponseStatus, contentType: String, body: String, extraHeaders: [String] = [],
                         includeBody: Bool) -> String {
        var lines = [
            "HTTP/1.0 \(status.code) \(status.reasonPhrase)",
            "Content-Type: \(contentType)",
            "Content-Length: \(body.utf8.count)",
            "Server: \(AirtapVersion.userAgent)",
            "Cache-Control: no-cache",
        ]
        lines += extraHeaders
        lines.append("Connection: close")
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (includeBody ? body : "")
    }

    static func text(_ status: HTTPResponseStatus, _ message: String, extraHeaders: [String] = [], includeBody: Bool = true) -> String {
        document(status: status, contentType: "text/plain; charset=utf-8", body: message + "\n",
                 extraHeaders: extraHeaders, includeBody: includeBody)
    }

    static func playlistPLS(streamURL: String, name: String, includeBody: Bool) -> String {
        let body = "[playlist]\r\nNumberOfEntries=1\r\nFile1=\(streamURL)\r\nTitle1=\(oneLine(name))\r\nLength1=-1\r\nVersion=2\r\n"
        return document(status: .ok, contentType: "audio/x-scpls", body: body, includeBody: includeBody)
    }

    static func playlistM3U(streamURL: String, name: String, includeBody: Bool) -> String {
        let body = "#EXTM3U\n#EXTINF:-1,\(oneLine(name))\n\(streamURL)\n"
        return document(status: .ok, contentType: "audio/x-mpegurl", body: body, includeBody: includeBody)
    }

    /// The stream's URL as the client reached us: its Host header when that is a plain
    /// host[:port] (it goes into a playlist, so nothing else is trusted), else the bound address.
    static func streamURL(hostHeader: String?, boundHost: String, boundPort: Int, path: String = "/stream") -> String {
        if let host = hostHeader, !host.isEmpty, host.utf8.count <= 255,
           host.unicodeScalars.allSatisfy({ $0.isASCII && (isAlphanumeric($0) || ".-:[]".unicodeScalars.contains($0)) }) {
            return "http://\(host)\(path)"
        }
        let host = boundHost.contains(":") ? "[\(boundHost)]" : boundHost
        return "http://\(host):\(boundPort)\(path)"
    }

    /// A station id as a URL path segment: unreserved characters as they are, the rest %XX.
    static func pathSegment(_ id: String) -> String {
        var result = ""
        for byte in id.utf8 {
            let scalar = Unicode.Scalar(byte)
            if byte < 0x80, isAlphanumeric(scalar) || "-._~".unicodeScalars.contains(scalar) {
                result.unicodeScalars.append(scalar)
            } else {
                let digits = Array("0123456789ABCDEF".unicodeScalars)
                result += "%"
                result.unicodeScalars.append(digits[Int(byte >> 4)])
                result.unicodeScalars.append(digits[Int(byte & 15)])
            }
        }
        return result
    }

    private static func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }

    /// Upstream values go into our headers: a CR or LF would end the header early.
    static func oneLine(_ value: String) -> String {
        String(value.unicodeScalars.map { $0 == "\r" || $0 == "\n" ? " " : Character($0) })
    }
}
