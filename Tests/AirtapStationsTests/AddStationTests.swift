@testable import AirtapKit
@testable import AirtapStations
import AirtapTestSupport
import Foundation
import Testing

/// `airtap add`: a station appended as text, the rest of the file untouched.
@Suite("airtap add")
struct AddStationTests {
    static let entry = StationsFileEdit.entryText(id: "new", name: "New \"one\"", urls: ["http://127.0.0.1:9/n"])

    @Test("The entry is valid JSON with its strings escaped")
    func entryText() {
        #expect(Self.entry == #"{ "id": "new", "name": "New \"one\"", "url": "http://127.0.0.1:9/n" }"#)
        #expect(StationsFileEdit.entryText(id: "a\u{1}", name: nil, urls: ["http://h/1", "http://h/2"])
                == #"{ "id": "a\u0001", "urls": ["http://h/1", "http://h/2"] }"#)
    }

    @Test("Inserted after the last station, everything else byte for byte", arguments: [
        // One per line, with a comment-like odd spacing and a key after the list.
        ("{\n  \"stations\": [\n    {\"id\": \"a\",   \"url\": \"http://h/a\"},\n\t\t{\"id\": \"b\", \"url\": \"http://h/b\"}\n  ],\n  \"x\": 1\n}\n",
         "{\n  \"stations\": [\n    {\"id\": \"a\",   \"url\": \"http://h/a\"},\n\t\t{\"id\": \"b\", \"url\": \"http://h/b\"},\n\t\t\(entry)\n  ],\n  \"x\": 1\n}\n"),
        // All on one line.
        ("{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/a\"}]}",
         "{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/a\"}, \(entry)]}"),
        // A trailing comma (JSONDecoder accepts it) stays where it was.
        ("{\"stations\": [\n  {\"id\": \"a\", \"url\": \"http://h/a\"},\n]}",
         "{\"stations\": [\n  {\"id\": \"a\", \"url\": \"http://h/a\"},\n  \(entry),\n]}"),
        // An empty list; a "stations" string inside another value is not the list.
        ("{\"note\": \"\\\"stations\\\": [\", \"stations\": []}",
         "{\"note\": \"\\\"stations\\\": [\", \"stations\": [\n  \(entry)\n]}"),
    ])
    func appending(file: String, expected: String) throws {
        let edited = try #require(StationsFileEdit.appending(entry: Self.entry, to: Array(file.utf8)))
        #expect(String(decoding: edited, as: UTF8.self) == expected)
        let catalog = try StationCatalog.parse(Data(edited), source: "s.json")
        #expect(catalog.stations.last?.name == "New \"one\"")
    }

    @Test("add: appends, refuses a duplicate id, creates the file when there is none; list reads it")
    func addCommand() async throws {
        let original = "{\n  \"stations\": [\n    { \"id\": \"a\", \"url\": \"http://127.0.0.1:9/a\" }\n  ]\n}\n"
        let folder = try AirtapBinary.temporaryFolder(with: original)
        let file = folder.appendingPathComponent("stations.json")
        let added = try await AirtapBinary.run(["add", "b", "http://127.0.0.1:9/b", "--name", "Bee"], in: folder)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout == "added b to \(file.path)\n")
        #expect(try String(contentsOf: file, encoding: .utf8) == """
            {
              "stations": [
                { "id": "a", "url": "http://127.0.0.1:9/a" },
                { "id": "b", "name": "Bee", "url": "http://127.0.0.1:9/b" }
              ]
            }

            """)

        let before = try Data(contentsOf: file)
        let duplicate = try await AirtapBinary.run(["add", "a", "http://127.0.0.1:9/other"], in: folder)
        #expect(duplicate.status == 1)
        #expect(duplicate.stderr == "airtap: station 'a' is already in \(file.path)\n")
        let notHTTP = try await AirtapBinary.run(["add", "c", "ftp://127.0.0.1/c"], in: folder)
        #expect(notHTTP.status == 1)
        let neither = try await AirtapBinary.run(["add", "c", "nosuch.pls"], in: folder)
        #expect(neither.status == 1)
        #expect(neither.stderr == "airtap: 'nosuch.pls' is neither an http(s) URL nor a playlist file\n")
        #expect(try Data(contentsOf: file) == before)

        // No stations.json anywhere: the per-user one is created, and the others find it.
        let empty = try AirtapBinary.temporaryFolder()
        let config = empty.appendingPathComponent("config")
        try "[playlist]\nFile1=http://127.0.0.1:9/one\nFile2=http://127.0.0.1:9/two\n"
            .write(to: empty.appendingPathComponent("radio.pls"), atomically: true, encoding: .utf8)
        let environment = ["XDG_CONFIG_HOME": config.path]
        let created = try await AirtapBinary.run(["add", "radio", "radio.pls"], in: empty, environment: environment)
        #expect(created.status == 0, "\(created.stderr)")
        let list = try await AirtapBinary.run(["list"], in: empty, environment: environment)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdoutLines.first == "# \(config.path)/airtap/stations.json")
        #expect(list.stdoutLines.last == "radio  radio  http://127.0.0.1:9/one +1")
    }
}
