import NIOHTTP1

/// What the station answers for a request line: a pure function, so routing is testable without sockets.
enum StationRoute: Equatable {
    case stream
    case playlistPLS
    case playlistM3U
    case page
    case status(Int)
    case notFound
    case methodNotAllowed

    init(method: HTTPMethod, uri: String) {
        guard method == .GET || method == .HEAD else {
            self = .methodNotAllowed
            return
        }
        // Players append queries (`?type=.mp3`) that a station ignores.
        let path = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
        switch path {
        // SHOUTcast v1 clients ask for `/;` (sometimes `/;stream.mp3`) to get the stream, not the status page.
        case "/", "/stream": self = .stream
        case _ where path.hasPrefix("/;"): self = .stream
        case "/listen.pls": self = .playlistPLS
        case "/listen.m3u": self = .playlistM3U
        case "/page.html": self = .page
        case _ where path.hasPrefix("/status/"):
            // 1xx, 204 and 304 must not carry a body and would confuse a plain HTTP/1.0 exchange.
            if let code = Int(path.dropFirst("/status/".count)), (200...599).contains(code), code != 204, code != 304 {
                self = .status(code)
            } else {
                self = .notFound
            }
        default: self = .notFound
        }
    }
}

enum StationResponses {
    /// The head of a stream response; `metaint` only when the client asked for metadata.
    static func streamHead(configuration: StationConfiguration, metaint: Int?) -> String {
        var lines: [String] = []
        switch configuration.style {
        case .http10:
            lines.append("HTTP/1.0 200 OK")
        case .shoutcastV1:
            lines.append("ICY 200 OK")
            // What SHOUTcast v1 servers put first; some clients show it.
            lines.append("icy-notice1: <BR>This stream requires <a href=\"http://www.winamp.com\">Winamp</a><BR>")
            lines.append("icy-notice2: airtap-teststation<BR>")
        }
        lines += [
            "Content-Type: \(configuration.codec.contentType)",
            "icy-name: \(headerValue(configuration.name))",
            "icy-genre: \(headerValue(configuration.genre))",
            "icy-url: \(headerValue(configuration.stationURL))",
            "icy-br: \(configuration.bitrate)",
            "icy-pub: 0",
            "icy-description: \(headerValue(configuration.description))",
            "Server: airtap-teststation",
            "Cache-Control: no-cache",
        ]
        if let metaint { lines.append("icy-metaint: \(metaint)") }
        return lines.joined(separator: "\r\n") + "\r\n\r\n"
    }

    /// A complete non-stream response (HTTP/1.0, the connection closes after it).
    static func document(
        status: Int, contentType: String, body: String, extraHeaders: [String] = [], includeBody: Bool
    ) -> String {
        var lines = [
            "HTTP/1.0 \(status) \(reason(status))",
            "Content-Type: \(contentType)",
            "Content-Length: \(body.utf8.count)",
            "Server: airtap-teststation",
        ]
        lines += extraHeaders
        lines.append("Connection: close")
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (includeBody ? body : "")
    }

    static func response(for route: StationRoute, configuration: StationConfiguration, port: Int, includeBody: Bool) -> String {
        let streamURL = "http://\(configuration.host):\(port)/stream"
        switch route {
        case .stream:
            preconditionFailure("streams are answered by streamHead")
        case .playlistPLS:
            let body = """
                [playlist]\r
                NumberOfEntries=1\r
                File1=\(streamURL)\r
                Title1=\(oneLine(configuration.name))\r
                Length1=-1\r
                Version=2\r

                """
            return document(status: 200, contentType: "audio/x-scpls", body: body, includeBody: includeBody)
        case .playlistM3U:
            let body = "#EXTM3U\n#EXTINF:-1,\(oneLine(configuration.name))\n\(streamURL)\n"
            return document(status: 200, contentType: "audio/x-mpegurl", body: body, includeBody: includeBody)
        case .page:
            let body = """
                <!DOCTYPE html>
                <html><head><meta charset="utf-8"><title>airtap test station</title></head>
                <body><h1>airtap test station</h1><p>This page is not a stream. Listen at <a href="/stream">/stream</a>.</p></body></html>

                """
            return document(status: 200, contentType: "text/html; charset=utf-8", body: body, includeBody: includeBody)
        case let .status(code):
            // A redirect points at the stream, so clients' redirect handling can be tested too.
            let location = (300...399).contains(code) ? ["Location: \(streamURL)"] : []
            return document(
                status: code, contentType: "text/plain; charset=utf-8", body: "\(code) \(reason(code))\n",
                extraHeaders: location, includeBody: includeBody)
        case .notFound:
            return document(
                status: 404, contentType: "text/plain; charset=utf-8", body: "404 Not Found\n", includeBody: includeBody)
        case .methodNotAllowed:
            return document(
                status: 405, contentType: "text/plain; charset=utf-8", body: "405 Method Not Allowed\n",
                extraHeaders: ["Allow: GET, HEAD"], includeBody: includeBody)
        }
    }

    static func reason(_ status: Int) -> String {
        HTTPResponseStatus(statusCode: status).reasonPhrase.isEmpty ? "Status" : HTTPResponseStatus(statusCode: status).reasonPhrase
    }

    /// Header values are sent as raw UTF-8 like real stations do, but a CR or LF would end the header.
    static func headerValue(_ value: String) -> String { oneLine(value) }

    static func oneLine(_ value: String) -> String {
        String(value.unicodeScalars.map { $0 == "\r" || $0 == "\n" ? " " : Character($0) })
    }
}
