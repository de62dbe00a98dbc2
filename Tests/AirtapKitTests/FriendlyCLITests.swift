import AirtapTestSupport
import Foundation
import TestStation
import Testing

/// The command line as a new user meets it: usage errors, messages without Swift names, the
/// station list, short options.
@Suite("airtap command line, friendly")
struct FriendlyCLITests {
    @Test("A mistyped subcommand gets a suggestion, one line, exit 1")
    func mistypedSubcommand() async throws {
        let result = try await AirtapBinary.run(["recrod", "demo"])
        #expect(result.status == 1)
        #expect(result.stderr == "airtap: unknown command 'recrod'; did you mean 'record'? (see 'airtap --help')\n")
        let nothingClose = try await AirtapBinary.run(["xyzzy"])
        #expect(nothingClose.status == 1)
        #expect(nothingClose.stderr.hasPrefix("airtap: unknown command 'xyzzy' (commands: record, "), "\(nothingClose.stderr)")
    }

    @Test("A usage error is one airtap: line ending with the subcommand's help",
          arguments: [(["record"], "airtap record --help"), (["probe", "http://127.0.0.1:9/", "--bogus"], "airtap probe --help"),
                      (["serve", "x", "--max-listeners", "0"], "airtap serve --help"), (["--bogus"], "airtap --help")])
    func usageErrorHint(arguments: [String], help: String) async throws {
        let result = try await AirtapBinary.run(arguments)
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(lines.first?.hasPrefix("airtap: ") == true, "\(result.stderr)")
        #expect(lines.first?.hasSuffix("(see '\(help)')") == true, "\(result.stderr)")
        #expect(!result.stderr.contains("USAGE"), "\(result.stderr)")
    }

    @Test("A stations.json that is an array says what the top level must be, with no Swift type name")
    func stationsFileIsAnArray() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: "[{\"id\": \"a\", \"url\": \"http://127.0.0.1:9/\"}]")
        let result = try await AirtapBinary.run(["list"], in: folder)
        #expect(result.status == 1)
        #expect(result.stderr.hasSuffix("stations.json: the top level must be an object: { \"stations\": [ ... ] }\n"), "\(result.stderr)")
        #expect(!result.stderr.contains("Dictionary"))

        let numberID = try AirtapBinary.temporaryFolder(with: "{\"stations\": [{\"id\": 5, \"url\": \"http://127.0.0.1:9/\"}]}")
        let second = try await AirtapBinary.run(["list"], in: numberID)
        #expect(second.status == 1)
        #expect(second.stderr.hasSuffix("stations[0].id: expected a string\n"), "\(second.stderr)")

        // JSONDecoder calls a fraction where an Int goes "not valid JSON", with no place.
        let fraction = try AirtapBinary.temporaryFolder(with: "{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/\", \"splitOffsetMs\": 1.5}]}")
        let third = try await AirtapBinary.run(["list"], in: fraction)
        #expect(third.status == 1)
        #expect(third.stderr.hasSuffix("stations.json: a number is out of range, or has a fraction where a whole number goes\n"), "\(third.stderr)")
    }

    @Test("serve on a port in use says so and how to pick another, exit 3")
    func servePortInUse() async throws {
        try await withStation { server in
            let result = try await AirtapBinary.run(["serve", "http://127.0.0.1:9/", "--listen", "127.0.0.1:\(server.port)"])
            #expect(result.status == 3)
            #expect(result.stderr == "airtap: 127.0.0.1:\(server.port) is already in use; --listen HOST:PORT picks another\n")
        }
    }

    @Test("No stations.json: list and a station id give the same message, exit 1", arguments: [["list"], ["probe", "demo"], ["record", "demo"], ["record", "--all"], ["schedule"]])
    func noStationsFile(arguments: [String]) async throws {
        let empty = try AirtapBinary.temporaryFolder()
        let result = try await AirtapBinary.run(arguments, in: empty)
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(lines.first?.contains("no stations.json found (looked in \(empty.path)/stations.json") == true, "\(result.stderr)")
    }

    @Test("list prints aligned columns under a header")
    func listColumns() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: """
            {"stations": [
              {"id": "a", "name": "A long station name", "url": "http://127.0.0.1:9/a"},
              {"id": "longer-id", "name": "B", "urls": ["http://127.0.0.1:9/b", "http://127.0.0.1:9/c"],
               "schedule": {"cron": "0 22 * * *", "duration": "2h"}}
            ]}
            """)
        let result = try await AirtapBinary.run(["list"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = Array(result.stdoutLines.dropFirst())
        #expect(lines == [
            "ID         NAME                 URL                      SCHEDULE",
            "a          A long station name  http://127.0.0.1:9/a",
            "longer-id  B                    http://127.0.0.1:9/b +1  0 22 * * * for 2h",
        ])
    }

    @Test("Short options: -o for --out, -t for --for, -s for --stations")
    func shortOptions() async throws {
        try await withStation { server in
            let folder = try AirtapBinary.temporaryFolder()
            let stations = folder.appendingPathComponent("mine.json")
            try "{\"stations\": [{\"id\": \"here\", \"url\": \"\(server.streamURL)\"}]}".write(to: stations, atomically: true, encoding: .utf8)
            let result = try await AirtapBinary.run(["record", "here", "-s", stations.path, "-o", "short", "-t", "4s"], in: folder)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!filesBelow(folder.appendingPathComponent("short")).filter { $0.hasSuffix(".mp3") }.isEmpty)
        }
    }
}
