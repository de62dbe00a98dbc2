@testable import AirtapKit
@testable import AirtapStations
import AirtapTestSupport
import Foundation
import TestStation
import Testing

/// Station ids: a bare URL's holds its path; stations.json's must be reachable mounts.
@Suite("Station ids")
struct StationIdentityTests {
    @Test("A bare URL's id holds its path: two streams on one host differ; one URL's id is the same on every run and machine")
    func bareURLIDs() {
        let groove = Station(adHocURL: "https://ice1.somafm.com/groovesalad-128-mp3")
        let drone = Station(adHocURL: "https://ice1.somafm.com/dronezone-128-mp3")
        #expect(groove.id != drone.id)
        // A constant, not computed here: FNV-1a is the same everywhere (Hasher is seeded per process).
        #expect(groove.id == "ice1.somafm.com-groovesalad-128-mp3-2867526b")
        #expect(groove.name == groove.id)
        #expect(Station(adHocURL: "https://user:secret@ICE1.somafm.com/groovesalad-128-mp3#x").id == groove.id)
        #expect(Station(adHocURL: "https://ice1.somafm.com/groovesalad-128-mp3?x=1").id != groove.id)
        // A query's listener token tells two URLs apart but never shows in the id.
        let tokened = Station(adHocURL: "https://ice1.somafm.com/groovesalad-128-mp3?sid=s3cr3t").id
        #expect(tokened.hasPrefix("ice1.somafm.com-groovesalad-128-mp3-") && !tokened.contains("s3cr3t") && tokened != groove.id, "\(tokened)")
        #expect(Station(adHocURL: "http://127.0.0.1:8765/stream").id.hasPrefix("127.0.0.1-8765-stream-"))
        let odd = [
            "http://[::1]:8000/a b/ü/../;x?q=\u{1B}[31m",
            "http://127.0.0.1/" + String(repeating: "long-", count: 200),
            "http://127.0.0.1/..", "http://127.0.0.1/", "http://127.0.0.1",
        ]
        for url in odd {
            let id = Station(adHocURL: url).id
            #expect(id.utf8.count <= 89, "\(id)")
            #expect(id.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-._".unicodeScalars.contains($0)) }, "\(id)")
            #expect(!id.hasPrefix(".") && !id.hasPrefix("-"), "\(id)")
            #expect(Station.problem(withID: id) == nil, "\(id)")
        }
    }


    @Test("Two bare URLs on one host and port, different paths: one record takes both, each with its own lock")
    func twoPathsOneHost() async throws {
        try await withStation(Programs.configuration(maxSeconds: 30)) { server in
            let folder = try AirtapBinary.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let urls = [server.streamURL, server.url(path: "/;stream.mp3")]
            // The streams' end (30 s, sent at once) ends it; -t only bounds a hang: under a limit
            // of seconds a loaded machine's first audio could come after it (exit 2).
            let result = try await AirtapBinary.run(["record"] + urls + ["-o", "out", "-t", "120s", "--retries", "0"], in: folder)
            #expect(result.status == 0, "\(result.stderr)")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("out").path)) ?? []
            let locks = Set(urls.map { ".airtap-\(Station(adHocURL: $0).id).lock" })
            #expect(locks.count == 2)
            #expect(locks.isSubset(of: Set(names)), "\(names)")
        }
    }

    @Test("Ids that make unreachable or shadowed mounts are refused in stations.json and by add, with the station and why",
          arguments: ["..", ".", "", ";x", "status", "stream", "metrics", "status-json.xsl", "listen.pls", "a\u{7}b"])
    func refusedIDs(id: String) async throws {
        let quoted = String(decoding: try JSONEncoder().encode(id), as: UTF8.self)
        let folder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [ { "id": \#(quoted), "url": "http://127.0.0.1:9/s" } ] }"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try await AirtapBinary.run(["list"], in: folder)
        #expect(list.status == 1, "\(list.stdout)")
        #expect(list.stderr.hasPrefix("airtap: \(folder.path)/stations.json: stations[0].id: "), "\(list.stderr)")
        #expect(list.stderr.split(separator: "\n").count == 1, "\(list.stderr)")
        let empty = try AirtapBinary.temporaryFolder(with: #"{ "stations": [] }"#)
        defer { try? FileManager.default.removeItem(at: empty) }
        let add = try await AirtapBinary.run(["add", id, "http://127.0.0.1:9/s"], in: empty)
        #expect(add.status == 1, "\(add.stdout)")
        #expect(try String(contentsOf: empty.appendingPathComponent("stations.json"), encoding: .utf8) == #"{ "stations": [] }"#)
    }
}
