import AirtapKit
import Foundation
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

    @Test("A wrong type is a configuration error naming the key; an unknown key inside is a warning")
    func refusals() throws {
        #expect(throws: AirtapError.self) { try Self.catalog("\"yes\"") }
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
}
