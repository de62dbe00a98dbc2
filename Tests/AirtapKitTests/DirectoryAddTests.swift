@testable import AirtapKit
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
@testable import CurlSource
import Foundation
@testable import Locking
import Logging
@testable import TestStation
import Testing

/// `add --from-directory` and the clicks `play` and `record` count for such a station.
@Suite("station directory: add and clicks")
struct DirectoryAddTests {
    typealias Fixtures = DirectoryFixtures

    @Test("add --from-directory writes the station's name, resolved URL, genre, homepage and uuid")
    func addFromDirectory() async throws {
        try await Fixtures.withServer(Fixtures.standardAnswer) { server, requests in
            let folder = try AirtapBinary.temporaryFolder(with: "{\n  \"stations\": [\n    { \"id\": \"a\", \"url\": \"http://127.0.0.1:9/a\" }\n  ]\n}\n")
            let file = folder.appendingPathComponent("stations.json")
            let added = try await AirtapBinary.run(["add", "jazz", "--from-directory", Fixtures.jazzUUID.uppercased(),
                                                    "--directory", server.url("")], in: folder)
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout == "added jazz (Jazz FM Helsinki, http://127.0.0.1:9/jazz) to \(file.path)\n")
            #expect(requests.withLock { $0.map(\.path) } == ["/json/stations/byuuid/\(Fixtures.jazzUUID)"])
            let catalog = try StationCatalog.parse(try Data(contentsOf: file), source: file.path)
            let station = try #require(catalog.stations.last)
            #expect(catalog.warnings.isEmpty)
            #expect(station.id == "jazz" && station.name == "Jazz FM Helsinki" && station.urls == ["http://127.0.0.1:9/jazz"])
            #expect(station.genre == "jazz, smooth jazz" && station.homepage == "https://example.org/")
            #expect(station.directoryUUID == Fixtures.jazzUUID)
            let listed = try await AirtapBinary.run(["list", "--json"], in: folder)
            let object = try #require(listed.stdoutLines.last.flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
            #expect(object["directory_uuid"] as? String == Fixtures.jazzUUID && object["genre"] as? String == "jazz, smooth jazz")

            let unknown = try await AirtapBinary.run(["add", "other", "--from-directory", Fixtures.newsUUID, "--directory", server.url("")],
                                                     in: folder)
            #expect(unknown.status == 1)
            #expect(unknown.stderr == "airtap: the station directory has no station \(Fixtures.newsUUID)\n")
            let malformed = try await AirtapBinary.run(["add", "other", "--from-directory", "../../x", "--directory", server.url("")],
                                                       in: folder)
            #expect(malformed.status == 1)
            #expect(malformed.stderr.hasPrefix("airtap: --from-directory: '../../x' is not a station uuid"))
            #expect(requests.withLock { $0.count } == 2)
        }
    }

    @Test("A stream URL of another scheme is refused, the name made plain, the file left alone",
          arguments: ["javascript:alert(1)", "file:///etc/passwd", "ftp://127.0.0.1/x", ""])
    func refusedURL(url: String) async throws {
        let answer = "[" + Fixtures.station(uuid: Fixtures.jazzUUID, name: "x", url: url, homepage: "javascript:alert(2)") + "]"
        try await Fixtures.withServer({ _ in Fixtures.json(answer) }) { server, _ in
            let original = "{ \"stations\": [] }\n"
            let folder = try AirtapBinary.temporaryFolder(with: original)
            let result = try await AirtapBinary.run(["add", "x", "--from-directory", Fixtures.jazzUUID, "--directory", server.url("")],
                                                    in: folder)
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("airtap: the directory's stream URL for \(Fixtures.jazzUUID) is not an http or https URL"))
            #expect(try String(contentsOf: folder.appendingPathComponent("stations.json"), encoding: .utf8) == original)
        }
    }

    @Test("The entry keeps no control or invisible characters, and no homepage that is not http(s)")
    func plainEntry() throws {
        let station = DirectoryStation(uuid: Fixtures.jazzUUID, name: " \u{1B}[2JBad\nName\u{202E} ", urlResolved: "https://127.0.0.1:9/s",
                                       homepage: "javascript:alert(1)", tags: ["a\u{7}", "b"])
        let entry = try DirectoryEntry(station)
        #expect(entry.name == "[2JBadName" && entry.genre == "a, b" && entry.homepage == nil && entry.url == "https://127.0.0.1:9/s")
        let broken = DirectoryStation(uuid: Fixtures.jazzUUID, name: "x", urlResolved: "http://127.0.0.1:9/a\r\nX-Injected: 1")
        #expect(throws: AirtapError.self) { try DirectoryEntry(broken) }
    }

    /// A station of the directory, in a stations file of its own, and a state folder shared by runs.
    static func clickSetUp(streamURL: String) throws -> (folder: URL, state: URL) {
        let folder = try AirtapBinary.temporaryFolder(with: """
            { "stations": [ { "id": "jazz", "url": "\(streamURL)", "directoryUuid": "\(Fixtures.jazzUUID)" },
                            { "id": "plain", "url": "\(streamURL)" } ] }
            """)
        let state = folder.appendingPathComponent("state")
        return (folder, state)
    }

    @Test("record counts a click for a directory station once; the next start the same day sends none")
    func recordClicksOnce() async throws {
        try await withStation(Programs.configuration(maxSeconds: 600)) { station in
            try await Fixtures.withServer(Fixtures.standardAnswer) { directory, requests in
                let (folder, state) = try Self.clickSetUp(streamURL: station.streamURL)
                let environment = ["AIRTAP_DIRECTORY": directory.url(""), "XDG_STATE_HOME": state.path]
                let journal = DirectoryClickJournal(folder: state.path + "/airtap/directory-clicks")
                let first = try await AirtapBinary.launch(["record", "jazz", "plain", "--for", "10m", "--out", folder.path + "/rec"],
                                                          in: folder, environment: environment)
                try await waitFor("the click") { journal.lastClick(Fixtures.jazzUUID) != nil }
                first.terminate()
                let ended = try await first.result()
                #expect(ended.status == 0, "\(ended.stderr)")
                #expect(requests.withLock { $0.map(\.path) } == ["/json/url/\(Fixtures.jazzUUID)"])
                #expect(requests.withLock { $0.first?.field("User-Agent") } == AirtapVersion.userAgent)

                // The same day: the journal says it is counted, so nothing is sent (the decision is
                // made before the session starts; the kit test below shows it returns no uuid).
                let second = try await AirtapBinary.run(["record", "jazz", "--for", "2s", "--out", folder.path + "/rec"],
                                                        in: folder, environment: environment)
                #expect(second.status == 0, "\(second.stderr)")
                #expect(requests.withLock { $0.count } == 1)
            }
        }
    }

    @Test("play counts a click for a directory station it starts; none for a station of its own")
    func playClicks() async throws {
        try await withStation(Programs.configuration(maxSeconds: 600)) { station in
            try await Fixtures.withServer(Fixtures.standardAnswer) { directory, requests in
                let (folder, state) = try Self.clickSetUp(streamURL: station.streamURL)
                let environment = ["AIRTAP_DIRECTORY": directory.url(""), "XDG_STATE_HOME": state.path]
                let journal = DirectoryClickJournal(folder: state.path + "/airtap/directory-clicks")
                let plain = try await AirtapBinary.run(["play", "plain", "--device", "null", "--for", "1s"], in: folder,
                                                       environment: environment)
                #expect(plain.status == 0, "\(plain.stderr)")
                let playing = try await AirtapBinary.launch(["play", "jazz", "--device", "null", "--for", "10m"], in: folder,
                                                            environment: environment)
                try await waitFor("the click") { journal.lastClick(Fixtures.jazzUUID) != nil }
                playing.terminate()
                let ended = try await playing.result()
                #expect(ended.status == 0, "\(ended.stderr)")
                #expect(requests.withLock { $0.map(\.path) } == ["/json/url/\(Fixtures.jazzUUID)"])
            }
        }
    }

    @Test("A click journal that holds no time (nan, garbage) makes the click due")
    func foreignClickJournal() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-clicks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: state) }
        let journal = DirectoryClickJournal(folder: state.path)
        for text in ["nan\n", "-nan", "garbage", ""] {
            try text.write(to: state.appendingPathComponent(Fixtures.jazzUUID), atomically: true, encoding: .utf8)
            #expect(journal.isDue(Fixtures.jazzUUID, now: 1_000_000), "\(text)")
        }
    }

    @Test("Clicks: due once a day per station, sent once per process, failed over, never for other stations")
    func clickRules() async throws {
        try await Fixtures.withServer(Fixtures.standardAnswer) { server, requests in
            let dead = try await Fixtures.withServer({ _ in [] }) { dead, _ in dead.url("") }
            let state = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-clicks-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: state) }
            let journal = DirectoryClickJournal(folder: state.path)
            let loop = CurlMultiLoop()
            defer { loop.shutdown() }
            let clock = Locked(1_000_000.0)
            func clicks() -> DirectoryClicks {
                DirectoryClicks(servers: .fixed([dead, server.url("")]), loop: loop, journal: journal, logger: Logger(label: "test"),
                                now: { clock.withLock { $0 } })
            }
            var station = Station(id: "jazz", name: "Jazz", urls: ["http://127.0.0.1:9/"])
            station.directoryUUID = Fixtures.jazzUUID
            let plain = Station(id: "plain", name: "Plain", urls: ["http://127.0.0.1:9/"])

            let first = clicks()
            #expect(first.started([station, plain]) == [Fixtures.jazzUUID])
            try await waitFor("the click") { journal.lastClick(Fixtures.jazzUUID) == 1_000_000 }
            #expect(requests.withLock { $0.map(\.path) } == ["/json/url/\(Fixtures.jazzUUID)"])
            #expect(first.started([station]).isEmpty)  // tuned back to it: not again in one process

            clock.withLock { $0 += 23 * 3600 }
            #expect(clicks().started([station]).isEmpty)  // a new process the same day
            clock.withLock { $0 += 3600 }
            #expect(clicks().started([station]) == [Fixtures.jazzUUID])  // a day later
            try await waitFor("the second click") { journal.lastClick(Fixtures.jazzUUID) == 1_000_000 + 24 * 3600 }
            #expect(requests.withLock { $0.count } == 2)
        }
    }
}
