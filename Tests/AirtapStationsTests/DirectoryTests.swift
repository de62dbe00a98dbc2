@testable import AirtapKit
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import CurlSource
import Foundation
import Locking
import Logging
@testable import TestStation
import Testing

/// The station directory: answers decoded from the API's shapes, and a local server searched,
/// filtered, added from and failed over, through the kit and through the binary.
@Suite("station directory")
struct DirectoryTests {
    typealias Fixtures = DirectoryFixtures

    @Test("An answer in the API's shape decodes; missing, extra and mistyped fields are tolerated")
    func decodesAnswer() throws {
        let stations = try DirectoryStation.list(from: Array(Fixtures.searchAnswer.utf8))
        #expect(stations.count == 2)
        let jazz = try #require(stations.first)
        #expect(jazz.uuid == Fixtures.jazzUUID && jazz.name == "Jazz FM Helsinki")
        #expect(jazz.streamURL == "http://127.0.0.1:9/jazz" && jazz.url == "http://127.0.0.1:9/jazz.pls")
        #expect(jazz.tags == ["jazz", "smooth jazz"] && jazz.countryCode == "FI" && jazz.codec == "AAC")
        #expect(jazz.bitrateKbps == 128 && !jazz.isHLS && jazz.lastCheckOK == true && jazz.votes == 412 && jazz.clickCount == 9120)

        // Only a uuid and a name; a bitrate as text, hls as true, a tag list of blanks; a number
        // where an object goes, and an entry without a valid uuid: left out.
        let sparse = #"[{"stationuuid":"\#(Fixtures.newsUUID)","name":"N","bitrate":"96","hls":true,"tags":" , ,"}, 7, {"stationuuid":"../../etc","name":"x"}, {"name":"no uuid"}]"#
        let decoded = try DirectoryStation.list(from: Array(sparse.utf8))
        #expect(decoded == [DirectoryStation(uuid: Fixtures.newsUUID, name: "N", bitrateKbps: 96, isHLS: true)])
    }

    @Test("Garbage is a typed error", arguments: [
        ("<html>502 Bad Gateway</html>", DirectoryAnswerError.notJSON),
        ("", .notJSON),
        (#"{"error":"rate limited"}"#, .notAList),
        ("42", .notAList),
    ])
    func garbage(text: String, expected: DirectoryAnswerError) {
        #expect(throws: expected) { try DirectoryStation.list(from: Array(text.utf8)) }
    }

    @Test("A url_resolved that is not http(s) gives way to an http(s) url; search never shows a javascript: or data: stream")
    func streamURLFallsBack() throws {
        let text = #"[{"stationuuid":"\#(Fixtures.jazzUUID)","url_resolved":"javascript:alert(1)","url":"http://127.0.0.1:9/good"},"#
            + #"{"stationuuid":"\#(Fixtures.newsUUID)","url_resolved":"data:audio/mpeg;base64,AAAA","url":"file:///etc/passwd"}]"#
        let stations = try DirectoryStation.list(from: Array(text.utf8))
        #expect(stations.map(\.streamURL) == ["http://127.0.0.1:9/good", nil])
        #expect(try DirectoryEntry(stations[0]).url == "http://127.0.0.1:9/good")
        #expect(throws: AirtapError.self) { try DirectoryEntry(stations[1]) }
        let line = MachineEvent.directoryStation(stations[1]).line(time: "t")
        #expect(!line.contains("data:") && !line.contains("file:"))
    }

    @Test("Each field is cut to its bound as it is decoded")
    func boundedFields() throws {
        let long = String(repeating: "a", count: 100_000)
        // The field itself is cut at 1024 characters first; 150 short tags and a long one fit.
        let tags = ([String(repeating: "x", count: 100)] + (0..<150).map { "t\($0)" }).joined(separator: ",")
        let text = #"[{"stationuuid":"\#(Fixtures.jazzUUID)","name":"\#(long)","tags":"\#(tags)"}]"#
        let station = try #require(try DirectoryStation.list(from: Array(text.utf8)).first)
        #expect(station.name.count == DirectoryStation.maxFieldBytes)
        #expect(station.tags.count == DirectoryStation.maxTags)
        #expect(station.tags.first?.count == DirectoryStation.maxTagBytes && station.tags.last == "t30")
    }

    @Test("The bound is in bytes: one character with a hundred thousand combining marks is cut too")
    func boundedMarks() throws {
        let heavy = "a" + String(repeating: "\u{301}", count: 100_000)
        let text = #"[{"stationuuid":"\#(Fixtures.jazzUUID)","name":"\#(heavy)","url_resolved":"http://127.0.0.1:9/\#(heavy)","tags":"\#(heavy)"}]"#
        let station = try #require(try DirectoryStation.list(from: Array(text.utf8)).first)
        #expect(station.name.utf8.count <= DirectoryStation.maxFieldBytes && station.name.unicodeScalars.starts(with: "a\u{301}".unicodeScalars))
        #expect((station.urlResolved?.utf8.count ?? .max) <= DirectoryStation.maxFieldBytes)
        #expect(station.tags.map(\.utf8.count).allSatisfy { $0 <= DirectoryStation.maxTagBytes })
    }

    @Test("The search query: filters percent-encoded, broken stations hidden, by clicks")
    func query() {
        let query = DirectoryQuery(name: "jazz & blues", tag: "smooth jazz", country: "fi", codec: "AAC+", limit: 5)
        #expect(query.pathAndQuery == "/json/stations/search?name=jazz%20%26%20blues&tag=smooth%20jazz&countrycode=FI&codec=AAC%2B"
                + "&limit=5&hidebroken=true&order=clickcount&reverse=true")
        #expect(DirectoryQuery(country: "Åland Islands").pathAndQuery.hasPrefix("/json/stations/search?country=%C3%85land%20Islands&limit=20"))
    }

    @Test("search keeps to --limit when the server sends more")
    func limitHeld() async throws {
        try await Fixtures.withServer(Fixtures.standardAnswer) { server, _ in
            let found = try await DirectoryJobs.search(DirectoryQuery(name: "jazz", limit: 1), plan: DirectoryPlan(directory: server.url("")))
            #expect(found.map(\.uuid) == [Fixtures.jazzUUID])
        }
    }

    @Test("search: the filters reach the server, one row per station, with a User-Agent of airtap's")
    func searchRows() async throws {
        try await Fixtures.withServer(Fixtures.standardAnswer) { server, requests in
            let result = try await AirtapBinary.run(["search", "jazz", "--tag", "jazz", "--country", "FI", "--codec", "AAC",
                                                     "--limit", "2", "--directory", server.url("")])
            #expect(result.status == 0, "\(result.stderr)")
            let request = try #require(requests.withLock { $0 }.first)
            #expect(request.path == "/json/stations/search?name=jazz&tag=jazz&countrycode=FI&codec=AAC&limit=2&hidebroken=true&order=clickcount&reverse=true")
            #expect(request.field("User-Agent") == AirtapVersion.userAgent)
            #expect(result.stdoutLines == [
                "NAME              CODEC  KBPS  COUNTRY  TAGS              UUID",
                "Jazz FM Helsinki  AAC    128   FI       jazz,smooth jazz  \(Fixtures.jazzUUID)",
                "Uutiset           MP3    64    FI       news              \(Fixtures.newsUUID)",
            ])
        }
    }

    @Test("search --json: one directory_station object per line; AIRTAP_DIRECTORY points at the server")
    func searchJSON() async throws {
        try await Fixtures.withServer(Fixtures.standardAnswer) { server, _ in
            let result = try await AirtapBinary.run(["search", "--json"], environment: ["AIRTAP_DIRECTORY": server.url("/")])
            #expect(result.status == 0, "\(result.stderr)")
            let objects = try result.stdoutLines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
            #expect(objects.count == 2)
            #expect(objects.allSatisfy { $0["event"] as? String == "directory_station" && $0["time"] is String })
            #expect(objects[0]["uuid"] as? String == Fixtures.jazzUUID)
            #expect(objects[0]["url"] as? String == "http://127.0.0.1:9/jazz")
            #expect(objects[0]["tags"] as? [String] == ["jazz", "smooth jazz"])
            #expect(objects[1]["bitrate_kbps"] as? Int == 64 && objects[1]["country_code"] as? String == "FI")
        }
    }

    @Test("Names with escape sequences and control bytes are inert in rows and escaped in JSON")
    func hostileNames() async throws {
        let name = "Evil\u{1B}]52;c;cm0gLXJmIH4=\u{07}\u{1B}[2J\nFake line\u{202E}"
        let answer = "[" + Fixtures.station(uuid: Fixtures.jazzUUID, name: name, url: "http://127.0.0.1:9/x", tags: "a\u{1B}[31m,b") + "]"
        try await Fixtures.withServer({ _ in Fixtures.json(answer) }) { server, _ in
            let rows = try await AirtapBinary.run(["search", "x", "--directory", server.url("")])
            #expect(rows.status == 0, "\(rows.stderr)")
            #expect(!rows.stdout.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\u{202E}" })
            #expect(rows.stdoutLines.count == 2)
            #expect(rows.stdoutLines[1].hasPrefix(#"Evil\e]52;c;cm0gLXJmIH4=\x07\e[2J\nFake"#))
            let json = try await AirtapBinary.run(["search", "x", "--json", "--directory", server.url("")])
            #expect(json.stdoutLines.count == 1 && !json.stdout.contains("\u{1B}"))
            let object = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect(object["name"] as? String == name)
        }
    }

    @Test("A 10 MB answer stops at the bound: one line, exit 2")
    func hugeAnswer() async throws {
        let body = Array("[".utf8) + [UInt8](repeating: UInt8(ascii: " "), count: 10 << 20) + Array("]".utf8)
        let steps: [ScriptedServer.Step] = [.send(ScriptedServer.head("HTTP/1.1 200 OK", ["Content-Type: application/json",
                                                                                       "Content-Length: \(body.count)"]) + body), .close]
        try await Fixtures.withServer({ _ in steps }) { server, _ in
            let result = try await AirtapBinary.run(["search", "x", "--directory", server.url("")])
            #expect(result.status == 2)
            #expect(result.stderr == "airtap: \(server.url("")): the directory's answer is larger than 2 MiB\n")
        }
    }

    @Test("A server that does not answer in time: one line, exit 2")
    func slowAnswer() async throws {
        try await Fixtures.withServer({ _ in [.hang] }) { server, _ in
            let result = try await AirtapBinary.run(["search", "x", "--timeout", "1s", "--directory", server.url("")])
            #expect(result.status == 2)
            #expect(result.stderr == "airtap: \(server.url("")): the directory did not answer within 1 s\n")
        }
    }

    @Test("An error page and a bad --directory are one line each")
    func errorAnswers() async throws {
        try await Fixtures.withServer({ _ in Fixtures.json("<html>busy</html>") }) { server, _ in
            let result = try await AirtapBinary.run(["search", "x", "--directory", server.url("")])
            #expect(result.status == 2)
            #expect(result.stderr == "airtap: \(server.url("")): the answer is not JSON\n")
        }
        let scheme = try await AirtapBinary.run(["search", "x", "--directory", "file:///etc/passwd"])
        #expect(scheme.status == 1)
        #expect(scheme.stderr == "airtap: --directory: 'file:///etc/passwd' is not an http or https URL\n")
    }

    @Test("A dead server and one that answers 503 are passed over for the next")
    func failover() async throws {
        let refusing = try RefusingPort()
        defer { withExtendedLifetime(refusing) {} }
        let dead = refusing.url
        try await Fixtures.withServer({ _ in [.send(ScriptedServer.head("HTTP/1.1 503 Busy", ["Content-Length: 0"])), .close] }) { busy, _ in
            try await Fixtures.withServer(Fixtures.standardAnswer) { live, requests in
                let loop = CurlMultiLoop()
                defer { loop.shutdown() }
                let client = DirectoryClient(servers: .fixed([dead, busy.url(""), live.url("")]), loop: loop)
                let stations = try await client.stations(DirectoryQuery(name: "jazz").pathAndQuery)
                #expect(stations.map(\.uuid) == [Fixtures.jazzUUID, Fixtures.newsUUID])
                #expect(requests.withLock { $0.count } == 1)

                // A 404 is the answer: not asked again elsewhere.
                let wrong = DirectoryClient(servers: .fixed([live.url(""), live.url("")]), loop: loop)
                await #expect(throws: AirtapError.network(url: live.url(""), reason: "the directory answered 404 Not Found")) {
                    try await wrong.stations("/json/nothing")
                }
                #expect(requests.withLock { $0.count } == 2)
            }
        }
    }

    @Test("Servers from a host name: its addresses' names, in random order")
    func resolvedServers() async throws {
        try await Fixtures.withServer(Fixtures.standardAnswer) { server, _ in
            let servers = DirectoryServers.resolved(host: "localhost", scheme: "http", port: server.port)
            var random = SystemRandomNumberGenerator()
            #expect(servers.candidates(using: &random) == ["http://localhost:\(server.port)"])
            let loop = CurlMultiLoop()
            defer { loop.shutdown() }
            let stations = try await DirectoryClient(servers: servers, loop: loop).stations(DirectoryQuery().pathAndQuery)
            #expect(stations.count == 2)
            // A reverse name is DNS text: only a plain host name becomes part of a URL.
            #expect(DirectoryServers.isHostName("de1.api.radio-browser.info"))
            #expect(!DirectoryServers.isHostName("evil.example/@x") && !DirectoryServers.isHostName("-x") && !DirectoryServers.isHostName(""))
        }
    }
}
