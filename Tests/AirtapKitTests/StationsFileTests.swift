@testable import AirtapKit
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import Foundation
import ICYWire
import TestStation
import Testing

/// stations.json as a user writes it: misspelt keys, non-http URLs, any iconv charset, and a
/// local playlist in place of a station.
@Suite("stations.json and station arguments")
struct StationsFileTests {
    @Test("An unknown key is a warning with a suggestion; the file still loads")
    func unknownKeyWarning() async throws {
        let json = """
            {"stations": [{"id": "a", "url": "http://127.0.0.1:9/", "chrset": "koi8-r",
                           "schedule": {"cron": "0 1 * * *", "duration": "1h", "cronn": "x"}}], "statons": []}
            """
        let catalog = try StationCatalog.parse(Data(json.utf8), source: "s.json")
        #expect(catalog.warnings == [
            "s.json: unknown key \"statons\" (did you mean \"stations\"?), ignored",
            "s.json: stations[0]: unknown key \"chrset\" (did you mean \"charset\"?), ignored",
            "s.json: stations[0].schedule: unknown key \"cronn\" (did you mean \"cron\"?), ignored",
        ])
        let clean = try StationCatalog.parse(Data("{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/\", \"splitOffsetMs\": 5}]}".utf8), source: "s.json")
        #expect(clean.warnings.isEmpty)

        let folder = try AirtapBinary.temporaryFolder(with: json)
        let result = try await AirtapBinary.run(["list"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("airtap: warning: \(folder.path)/stations.json: stations[0]: unknown key \"chrset\" (did you mean \"charset\"?), ignored\n"),
                "\(result.stderr)")
    }

    @Test("A URL that is not http(s) is refused when the file loads, with its JSON path, exit 1",
          arguments: [("{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/\"}, {\"id\": \"b\", \"url\": \"ftp://h/x\"}]}", "stations[1].url: 'ftp://h/x' is not an http or https URL"),
                      ("{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/\", \"urls\": [\"https://h/\", \"file:///etc/passwd\"]}]}", "stations[0].urls[1]: 'file:///etc/passwd' is not an http or https URL"),
                      ("{\"stations\": [{\"id\": \"a\", \"urls\": [\"h/stream\"]}]}", "stations[0].urls[0]: 'h/stream' is not an http or https URL"),
                      ("{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/a\\r\\nX: 1\"}]}", "stations[0].url: 'http://h/a\\r\\nX: 1' is not an http or https URL")])
    func nonHTTPURL(json: String, expected: String) async throws {
        let folder = try AirtapBinary.temporaryFolder(with: json)
        let result = try await AirtapBinary.run(["list"], in: folder)
        #expect(result.status == 1)
        #expect(result.stderr == "airtap: \(folder.path)/stations.json: \(expected)\n")
    }

    @Test("Any charset iconv knows decodes titles; an unknown one is refused")
    func iconvCharsets() throws {
        // "привет" in KOI8-R, "日本" in Shift_JIS, "Łódź" in ISO-8859-2: none is valid UTF-8.
        let cases: [(String, [UInt8], String)] = [
            ("koi8-r", [0xD0, 0xD2, 0xC9, 0xD7, 0xC5, 0xD4], "привет"),
            ("SHIFT_JIS", [0x93, 0xFA, 0x96, 0x7B], "日本"),
            ("iso-8859-2", [0xA3, 0xF3, 0x64, 0xBC], "Łódź"),
        ]
        for (charset, bytes, text) in cases {
            let json = "{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/\", \"charset\": \"\(charset)\"}]}"
            let station = try #require(try StationCatalog.parse(Data(json.utf8), source: "s.json").stations.first)
            let block = Array("StreamTitle='".utf8) + bytes + Array("';".utf8)
            #expect(StreamMetadata.parse(block, decoding: station.titleDecoding).streamTitle == text, "\(charset)")
        }
        // UTF-8 stays UTF-8 whatever the charset; bytes iconv refuses fall back to CP1252.
        let koi = Station(id: "k", name: "k", urls: ["http://h/"], charset: "koi8-r").titleDecoding
        #expect(koi.decode(Array("ünïcode".utf8)) == "ünïcode")
        let sjis = Station(id: "s", name: "s", urls: ["http://h/"], charset: "shift_jis").titleDecoding
        #expect(sjis.decode([0x93]) == "“")  // a lead byte with nothing after it
        // The four built-in names keep working without iconv.
        #expect(Station(id: "w", name: "w", urls: ["http://h/"], charset: "cp1251").titleDecoding.custom == nil)

        #expect(throws: AirtapError.self) {
            try StationCatalog.parse(Data("{\"stations\": [{\"id\": \"a\", \"url\": \"http://h/\", \"charset\": \"klingon\"}]}".utf8), source: "s.json")
        }
        #expect(IconvDecoder(charset: "klingon") == nil)
        #expect(IconvDecoder(charset: "") == nil)
    }

    @Test("A local .pls or .m3u works as a station argument; a bad one is one clear line")
    func localPlaylist() async throws {
        try await withStation { server in
            let folder = try AirtapBinary.temporaryFolder()
            try "[playlist]\nNumberOfEntries=2\nFile1=\(server.streamURL)\nFile2=http://127.0.0.1:9/\n"
                .write(to: folder.appendingPathComponent("listen.pls"), atomically: true, encoding: .utf8)
            try "#EXTM3U\n#EXTINF:-1,Test\n\(server.streamURL)\n"
                .write(to: folder.appendingPathComponent("listen.m3u"), atomically: true, encoding: .utf8)
            for file in ["listen.pls", "./listen.m3u"] {
                // The stream's end (14 s, sent at once) ends it; -t only bounds a hang: under a limit
                // of seconds a loaded machine's first title could come after it.
                let result = try await AirtapBinary.run(["probe", file, "-t", "60s"], in: folder)
                #expect(result.status == 0, "\(file): \(result.stderr)")
                #expect(result.stdout.contains("title: Airtap Test Tones"), "\(file): \(result.stdout)")
            }

            let station = try StationCatalog.stationFromPlaylistFile(folder.appendingPathComponent("listen.pls").path)
            #expect(station.urls == [server.streamURL, "http://127.0.0.1:9/"])

            try "[playlist]\nFile1=relative/stream\n".write(to: folder.appendingPathComponent("bad.pls"), atomically: true, encoding: .utf8)
            let bad = try await AirtapBinary.run(["probe", "bad.pls"], in: folder)
            #expect(bad.status == 2)
            #expect(bad.stderr == "airtap: bad.pls: playlist: no http or https stream in it\n")
            let missing = try await AirtapBinary.run(["probe", "missing.m3u"], in: folder)
            #expect(missing.status == 3)
            #expect(missing.stderr == "airtap: cannot read playlist missing.m3u\n")
        }
    }
}
