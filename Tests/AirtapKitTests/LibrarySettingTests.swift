import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import AirtapTestSupport
import Foundation
import RecordingRules
import TestStation
import Testing

/// stations.json's `"library"` and the command's flags over it: the library's work is paid for
/// only when one of them turns it on.
@Suite("Library: off unless stations.json or a flag turns it on")
struct LibrarySettingTests {
    static func catalog(_ library: String?) throws(AirtapError) -> StationCatalog {
        let key = library.map { "\"library\": \($0), " } ?? ""
        let text = "{ \(key)\"stations\": [{ \"id\": \"a\", \"url\": \"http://127.0.0.1:1/\" }] }"
        return try StationCatalog.parse(Data(text.utf8), source: "/srv/conf/stations.json")
    }

    @Test("true, false, absent and an object; a relative path is the stations file's folder's")
    func parsing() throws {
        #expect(try Self.catalog(nil).library == nil)
        #expect(try Self.catalog("false").library == LibrarySetting(isOn: false))
        #expect(try Self.catalog("true").library == LibrarySetting(isOn: true))
        let object = try Self.catalog("{ \"path\": \"music/lib.sqlite\", \"replaygain\": false, \"dedupe\": true }").library
        #expect(object == LibrarySetting(isOn: true, path: "/srv/conf/music/lib.sqlite", replayGain: false, dedupe: true))
        #expect(try Self.catalog("{ \"path\": \"/x/lib.sqlite\" }").library?.path == "/x/lib.sqlite")

    }

    @Test("~/ in the path is $HOME, as in a shell; a name that only starts with ~ is relative like any other")
    func homeInThePath() {
        let setting = LibrarySetting(isOn: true, path: "~/radio/lib.sqlite")
        #expect(setting.resolvingPath(from: "/srv/conf", home: "/home/listener").path == "/home/listener/radio/lib.sqlite")
        #expect(LibrarySetting(isOn: true, path: "~").resolvingPath(from: "/srv/conf", home: "/home/listener").path == "/home/listener")
        #expect(LibrarySetting(isOn: true, path: "~lib.sqlite").resolvingPath(from: "/srv/conf", home: "/home/listener").path
            == "/srv/conf/~lib.sqlite")
        // No usable $HOME: the stations file's folder, never the password database's idea of home.
        #expect(setting.resolvingPath(from: "/srv/conf", home: nil).path == "/srv/conf/~/radio/lib.sqlite")
    }

    @Test("A wrong type is a configuration error naming the key; an unknown key inside is a warning")
    func refusals() throws {
        #expect(throws: AirtapError.configuration(
            "/srv/conf/stations.json: library: expected true, false or an object with \"path\", \"replaygain\", \"dedupe\"")) {
            try Self.catalog("\"yes\"")
        }
        #expect(throws: AirtapError.self) { try Self.catalog("{ \"dedupe\": 1 }") }
        #expect(throws: AirtapError.self) { try Self.catalog("{ \"path\": \"\" }") }
        let warned = try Self.catalog("{ \"replaygian\": true }")
        #expect(warned.warnings.contains { $0.contains("library: unknown key \"replaygian\"") && $0.contains("replaygain") })
    }

    @Test("Flags over the file: nothing by default; --library, --dedupe, --replaygain turn parts on; --no-* turn them off")
    func resolving() {
        let on = LibrarySetting(isOn: true)
        func resolve(_ request: LibraryRequest, _ setting: LibrarySetting?) -> (Bool, String?, Bool, Bool) {
            let (library, loudness) = request.resolve(over: setting)
            return (library.uses, library.path, library.dedupes, loudness)
        }
        #expect(resolve(LibraryRequest(), nil) == (false, nil, false, false))
        #expect(resolve(LibraryRequest(), LibrarySetting(isOn: false)) == (false, nil, false, false))
        #expect(resolve(LibraryRequest(), on) == (true, nil, false, true))
        #expect(resolve(LibraryRequest(path: "x.sqlite"), nil) == (true, "x.sqlite", false, true))
        #expect(resolve(LibraryRequest(dedupe: true), nil) == (true, nil, true, true))
        #expect(resolve(LibraryRequest(replayGain: true), nil) == (false, nil, false, true))
        #expect(resolve(LibraryRequest(off: true), on) == (false, nil, false, false))
        #expect(resolve(LibraryRequest(off: true, replayGain: true), on) == (false, nil, false, true))
        #expect(resolve(LibraryRequest(noReplayGain: true), on) == (true, nil, false, false))
        let file = LibrarySetting(isOn: true, path: "/l.sqlite", replayGain: false, dedupe: true)
        #expect(resolve(LibraryRequest(), file) == (true, "/l.sqlite", true, false))
        #expect(resolve(LibraryRequest(path: "/m.sqlite"), file) == (true, "/m.sqlite", true, false))
    }

    @Test("record: by default no index and no ReplayGain; stations.json's \"library\": true turns both on; --no-library turns them off again")
    func recordPaysOnlyWhenAsked() async throws {
        let server = try await TestStationServer.start(RecordTests.configuration(), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        func record(_ name: String, library: String?, _ extra: [String] = []) async throws -> (index: String, tracks: [String]) {
            let stations = folder.appendingPathComponent("\(name).json")
            let key = library.map { "\"library\": \($0), " } ?? ""
            try Data("{ \(key)\"stations\": [{ \"id\": \"demo\", \"url\": \"\(server.streamURL)\" }] }".utf8).write(to: stations)
            let data = folder.appendingPathComponent("\(name)-data")
            let out = folder.appendingPathComponent("\(name)-out")
            let result = try await AirtapBinary.run(["record", "demo", "--stations", stations.path, "--retries", "0", "--out", out.path] + extra,
                                                    environment: ["XDG_DATA_HOME": data.path])
            #expect(result.status == 0, "\(result.stderr)")
            let files = FileManager.default.enumerator(atPath: out.path)?.compactMap { $0 as? String } ?? []
            return (data.path + "/airtap/library.sqlite", files.filter { $0.hasSuffix(".mp3") }.map { out.path + "/" + $0 })
        }
        func hasGain(_ path: String) async throws -> Bool {
            try await ReplayGainTagTests.ffprobeTags(path)["replaygain_track_gain"] != nil
        }

        let plain = try await record("plain", library: nil)
        #expect(!plain.tracks.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: plain.index), "no index unless the library is on")
        for track in plain.tracks { #expect(try await !hasGain(track), "\(track)") }

        let on = try await record("on", library: "true")
        let entries = try LibraryIndex(path: on.index).list()
        #expect(entries.count == on.tracks.count && !entries.isEmpty)
        #expect(entries.allSatisfy { $0.gain != nil })
        for track in on.tracks { #expect(try await hasGain(track), "\(track)") }

        let off = try await record("off", library: "true", ["--no-library"])
        #expect(!off.tracks.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: off.index))
        for track in off.tracks { #expect(try await !hasGain(track), "\(track)") }
    }

    @Test("The library subcommands read the index stations.json names; --library still wins; reading creates nothing")
    func subcommandsFollowTheSetting() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let stations = folder.appendingPathComponent("stations.json")
        try Data(#"{ "library": { "path": "music/lib.sqlite" }, "stations": [] }"#.utf8).write(to: stations)
        // Nothing there yet: list, search and prune say so, exit 0, and leave no folder or index.
        for command in [["list"], ["search", "x"], ["prune"]] {
            let read = try await AirtapBinary.run(["library"] + command + ["--stations", stations.path])
            #expect(read.status == 0, "\(command): \(read.stderr)")
            #expect(read.stderr.contains("no library index at \(folder.path)/music/lib.sqlite yet"), "\(command): \(read.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder.path + "/music"), "\(command) made the index's folder")
        }
        // scan writes: it makes the index the setting names.
        let scanned = try await AirtapBinary.run(["library", "scan", folder.path, "--stations", stations.path])
        #expect(scanned.status == 0, "\(scanned.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/music/lib.sqlite"))
        let listed = try await AirtapBinary.run(["library", "list", "--stations", stations.path])
        #expect(listed.status == 0 && listed.stderr.isEmpty, "\(listed.stderr)")
        let other = folder.appendingPathComponent("other.sqlite").path
        let named = try await AirtapBinary.run(["library", "list", "--stations", stations.path, "--library", other])
        #expect(named.status == 0, "\(named.stderr)")
        #expect(named.stderr.contains("no library index at \(other) yet"), "\(named.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other))
    }
}
