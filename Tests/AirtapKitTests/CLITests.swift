import AirtapTestSupport
import AudioFingerprinting
import Foundation
@testable import TestStation
import Testing

@Suite("airtap command line")
struct CLITests {
    @Test("probe prints the head, the format and every title, in both protocols",
          arguments: [StationConfiguration.Style.http10, .shoutcastV1])
    func probe(style: StationConfiguration.Style) async throws {
        try await withStation(Programs.configuration(style)) { server in
            let result = try await AirtapBinary.run(["probe", server.streamURL, "--for", "30s"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdoutLines
            #expect(lines.contains { $0.hasPrefix("status") && $0.contains(style == .shoutcastV1 ? "ICY 200" : "HTTP/1.0 200") })
            #expect(lines.contains("name      \(server.configuration.name)"))
            #expect(lines.contains("codec     MP3, 128 kbps, 44100 Hz, stereo"))
            let announced = announcedTitles(server, audioCount: server.program.audioByteCount(from: 0, seconds: 14))
            let printed = lines.compactMap { line -> String? in
                guard let range = line.range(of: "] title: ") else { return nil }
                return String(line[range.upperBound...])
            }
            #expect(printed == announced.map(\.title))
            #expect(lines.last == "ended     end of stream")
        }
    }

    @Test("probe --json prints one object per event")
    func probeJSON() async throws {
        try await withStation { server in
            let result = try await AirtapBinary.run(["probe", server.streamURL, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let objects = try result.stdoutLines.map { line in
                try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            let kinds = objects.compactMap { $0["event"] as? String }
            #expect(kinds.first == "head")
            // What a recording would correct its cuts by, then the stream's format.
            #expect(Array(kinds.dropFirst().prefix(2)) == ["title_delay", "format"])
            #expect(objects.dropFirst().first?["state"] as? String == "learning")
            #expect(kinds.last == "stop")
            let titles = objects.filter { $0["event"] as? String == "title" }.compactMap { $0["raw"] as? String }
            #expect(titles.count >= server.program.tracks.count)
            #expect(objects.first?["metaint_bytes"] as? Int == server.configuration.metaint)
            #expect(objects.first?["status"] as? Int == 200)
        }
    }

    @Test("A 404 and a text/html page end with one line on stderr and exit 2",
          arguments: [("/missing", "404"), ("/page.html", "text/html")])
    func streamErrors(path: String, expected: String) async throws {
        try await withStation { server in
            let result = try await AirtapBinary.run(["probe", server.url(path: path)])
            #expect(result.status == 2)
            let errorLines = result.stderr.split(separator: "\n")
            #expect(errorLines.count == 1, "\(result.stderr)")
            #expect(errorLines.first?.hasPrefix("airtap: ") == true)
            #expect(errorLines.first?.contains(expected) == true)
        }
    }

    @Test("""
          airtap starts without libchromaprint and FFmpeg's libraries (opened only to fingerprint), and without libshout \
          and the cairo and X11 it brings (opened only to push to Icecast); a fingerprint loads libchromaprint
          """)
    func startsWithoutChromaprint() async throws {
        // The dynamic loader lists each library it loads (LD_DEBUG=files) on stderr.
        let started = try await AirtapBinary.run(["--version"], environment: ["LD_DEBUG": "files"])
        #expect(started.status == 0)
        #expect(started.stderr.contains("file=libmpg123.so"), "the loader's list is not there: \(started.stderr.prefix(300))")
        for library in ["libchromaprint.so", "libavcodec.so", "libshout.so", "libtheora.so", "libcairo.so", "libX11.so"] {
            #expect(!started.stderr.contains("file=\(library)"), "\(library) loaded at start")
        }
        _ = try AudioFingerprinter()
        // /proc files say they are empty: read to the end, not by the size.
        let maps = try #require(FileHandle(forReadingAtPath: "/proc/self/maps")).readDataToEndOfFile()
        #expect(String(decoding: maps, as: UTF8.self).contains("libchromaprint.so"))
    }

    @Test("An unknown station lists the known ids and exits 1")
    func unknownStation() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: """
            {"stations": [{"id": "one", "url": "http://127.0.0.1:9/a"}, {"id": "two", "name": "Two", "urls": ["http://127.0.0.1:9/b"]}]}
            """)
        let result = try await AirtapBinary.run(["probe", "three"], in: folder)
        #expect(result.status == 1)
        #expect(result.stderr == "airtap: unknown station 'three' (known: one, two)\n")

        let list = try await AirtapBinary.run(["list"], in: folder)
        #expect(list.status == 0)
        #expect(list.stdoutLines.dropFirst(2).map { $0.split(separator: " ").first.map(String.init) } == ["one", "two"])
    }

    @Test("A malformed stations.json names the line and column and exits 1")
    func malformedStations() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: "{\"stations\": [\n  {\"id\": \"a\",\n   \"url\": \"http://127.0.0.1:9/\" \"x\"}\n]}\n")
        let result = try await AirtapBinary.run(["list"], in: folder)
        #expect(result.status == 1)
        #expect(result.stderr.contains("line 3, column"), "\(result.stderr)")

        let missingURL = try AirtapBinary.temporaryFolder(with: "{\"stations\": [{\"id\": \"a\"}]}")
        let second = try await AirtapBinary.run(["list"], in: missingURL)
        #expect(second.status == 1)
        #expect(second.stderr.contains("stations[0]"), "\(second.stderr)")

        let unknownCharset = try AirtapBinary.temporaryFolder(
            with: "{\"stations\": [{\"id\": \"a\", \"url\": \"http://127.0.0.1:9/\", \"charset\": \"klingon\"}]}")
        let third = try await AirtapBinary.run(["list"], in: unknownCharset)
        #expect(third.status == 1)
        #expect(third.stderr.contains("unknown charset 'klingon'"), "\(third.stderr)")
    }

    @Test("Bad durations are usage errors with exit 1", arguments: ["0", "abc", "10x", "-5m", "1e10"])
    func badDuration(text: String) async throws {
        let result = try await AirtapBinary.run(["probe", "http://127.0.0.1:9/", "--for", text])
        #expect(result.status == 1)
        #expect(result.stderr.contains("--for"), "\(result.stderr)")
    }
}
