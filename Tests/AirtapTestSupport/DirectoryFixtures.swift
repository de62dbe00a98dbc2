import AirtapKit
import AirtapSupport
import Foundation
import Locking
import NIOPosix
import TestStation

/// Answers in the shapes radio-browser's API documents (`/json/stations/search`,
/// `/json/stations/byuuid/UUID`, `/json/url/UUID`), served by a `ScriptedServer` on 127.0.0.1
/// that keeps every request it got.
package enum DirectoryFixtures {
    package static let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    package static let jazzUUID = "96062a7b-0601-11e8-ae97-52543be04c81"
    package static let newsUUID = "d1a54d2e-623e-4970-ab11-35f7b56c5ec3"

    /// One station object with every field the API sends (and some it adds over time).
    package static func station(uuid: String, name: String, url: String, urlResolved: String? = nil, tags: String = "jazz,smooth jazz",
                        country: String = "Finland", countryCode: String = "FI", codec: String = "AAC", bitrate: Int = 128,
                        homepage: String = "https://example.org/") -> String {
        func quoted(_ text: String) -> String { JSONValue.quoted(text) }
        return """
            {"changeuuid":"610cafba-71d8-40fc-bf68-1456ec973b9d","stationuuid":\(quoted(uuid)),"serveruuid":null,\
            "name":\(quoted(name)),"url":\(quoted(url)),"url_resolved":\(quoted(urlResolved ?? url)),\
            "homepage":\(quoted(homepage)),"favicon":"https://example.org/icon.png","tags":\(quoted(tags)),\
            "country":\(quoted(country)),"countrycode":\(quoted(countryCode)),"iso_3166_2":null,"state":"","language":"finnish",\
            "languagecodes":"fi","votes":412,"lastchangetime":"2026-01-02 08:40:32","lastchangetime_iso8601":"2026-01-02T08:40:32Z",\
            "codec":\(quoted(codec)),"bitrate":\(bitrate),"hls":0,"lastcheckok":1,"lastchecktime":"2026-11-28 20:01:00",\
            "lastcheckoktime":"2026-11-28 20:01:00","lastlocalchecktime":"","clicktimestamp":"2026-11-28 21:00:00",\
            "clickcount":9120,"clicktrend":12,"ssl_error":0,"geo_lat":60.17,"geo_long":24.94,"geo_distance":null,\
            "has_extended_info":false}
            """
    }

    package static var searchAnswer: String {
        "[" + [
            station(uuid: jazzUUID, name: "Jazz FM Helsinki", url: "http://127.0.0.1:9/jazz.pls",
                    urlResolved: "http://127.0.0.1:9/jazz"),
            station(uuid: newsUUID, name: "Uutiset", url: "https://127.0.0.1:9/news", tags: "news", codec: "MP3", bitrate: 64),
        ].joined(separator: ",") + "]"
    }

    package static func clickAnswer(uuid: String) -> String {
        #"{"ok":true,"message":"retrieved station url","stationuuid":"\#(uuid)","name":"Jazz FM Helsinki","url":"http://127.0.0.1:9/jazz"}"#
    }

    /// A 200 with a JSON body.
    package static func json(_ body: String) -> [ScriptedServer.Step] {
        let bytes = Array(body.utf8)
        return [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: application/json", "Content-Length: \(bytes.count)"]) + bytes),
                .close]
    }

    package static let notFound: [ScriptedServer.Step] = [.send(ScriptedServer.head("HTTP/1.1 404 Not Found", ["Content-Length: 0"])), .close]

    /// A directory server: `answer` maps a request path (with its query) to what it does; every
    /// request (path and User-Agent) is kept in the second argument.
    package static func withServer<T>(_ answer: @escaping @Sendable (String) -> [ScriptedServer.Step],
                              _ body: (ScriptedServer, Locked<[ScriptedServer.Request]>) async throws -> T) async throws -> T {
        let requests = Locked<[ScriptedServer.Request]>([])
        let server = try await ScriptedServer.startReadingHeaders(eventLoopGroup: loops) { request in
            requests.withLock { $0.append(request) }
            return answer(request.path)
        }
        do {
            let result = try await body(server, requests)
            try await server.stop()
            return result
        } catch {
            try? await server.stop()
            throw error
        }
    }

    /// The usual answers: the search list, a station by uuid, a click.
    package static func standardAnswer(_ path: String) -> [ScriptedServer.Step] {
        if path.hasPrefix("/json/stations/search") { return json(searchAnswer) }
        if path == "/json/stations/byuuid/\(jazzUUID)" {
            return json("[" + station(uuid: jazzUUID, name: "Jazz FM Helsinki", url: "http://127.0.0.1:9/jazz.pls",
                                      urlResolved: "http://127.0.0.1:9/jazz") + "]")
        }
        if path.hasPrefix("/json/stations/byuuid/") { return json("[]") }
        if path.hasPrefix("/json/url/") { return json(clickAnswer(uuid: String(path.dropFirst("/json/url/".count)))) }
        return notFound
    }
}
