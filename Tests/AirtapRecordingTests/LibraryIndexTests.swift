@testable import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
@testable import AudioFingerprinting
import Foundation
@testable import Locking
@testable import TestStation
import Testing

/// The library index without a recording: schema, search, prune, dedupe decisions on real
/// music, a full disk.
@Suite struct LibraryIndexTests {
    static func temporaryIndex() throws -> (LibraryIndex, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-library-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return (try LibraryIndex(path: folder.appendingPathComponent("library.sqlite").path), folder)
    }

    static func entry(_ path: String, title: String, artist: String? = nil, station: String? = nil, at seconds: Double = 0,
                      complete: Bool = true, fingerprint: Fingerprint? = nil) -> LibraryEntry {
        LibraryEntry(path: path, stationID: station, stationName: station, title: title, artist: artist,
                     startedAt: Date(timeIntervalSince1970: 1_700_000_000 + seconds), seconds: 180, codec: "MP3", bitrate: 128_000,
                     isComplete: complete, fingerprint: fingerprint)
    }

    @Test func aNewIndexIsWALAtTheNewestSchemaAndReopens() throws {
        let (index, folder) = try Self.temporaryIndex()
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try index.add(Self.entry("/music/a.mp3", title: "A"), dedupe: false)
        let again = try LibraryIndex(path: index.path)
        #expect(try again.list().map(\.path) == ["/music/a.mp3"])
        #expect(try again.integrityCheck() == "ok")
        #expect(FileManager.default.fileExists(atPath: index.path + "-wal"))
    }

    /// Recorders started together (one cron minute) on a library that does not exist yet: each
    /// opens it and adds its track. SQLite answers the losers of the race to make a new file WAL
    /// "database is locked" at once, without waiting its busy timeout; none may fail for that.
    @Test func recordersOpeningANewIndexAtOnceAllGetIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-library-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let openers = 4
        for round in 0..<60 {
            let path = folder.appendingPathComponent("library-\(round).sqlite").path
            let failures = Locked<[String]>([])
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for opener in 0..<openers {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    start.wait()
                    do {
                        let index = try LibraryIndex(path: path)
                        _ = try index.add(Self.entry("/music/\(opener).mp3", title: "\(opener)"), dedupe: false)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            for _ in 0..<openers { start.signal() }
            // Waited for off the task pool, which the rest of the suite shares.
            await withCheckedContinuation { finished in done.notify(queue: .global()) { finished.resume() } }
            #expect(failures.withLock { $0 }.isEmpty, "round \(round): \(failures.withLock { $0 })")
            #expect(try LibraryIndex(path: path).list().count == openers)
        }
    }

    @Test func anIndexOfANewerSchemaIsRefusedAndLeftAlone() throws {
        let (index, folder) = try Self.temporaryIndex()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = index.path
        let sqlite = Process()
        sqlite.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        sqlite.arguments = ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA user_version=99'); c.commit()", path]
        try ChildProcesses.spawn(sqlite)
        sqlite.waitUntilExit()
        #expect(throws: LibraryError.self) { _ = try LibraryIndex(path: path) }
    }

    @Test func searchIgnoresCaseInAllOfUnicodeOverTitleArtistAndStationNewestFirst() throws {
        let (index, folder) = try Self.temporaryIndex()
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try index.add(Self.entry("/m/1.mp3", title: "Jóga", artist: "BJÖRK", station: "Nordic", at: 10), dedupe: false)
        _ = try index.add(Self.entry("/m/2.mp3", title: "Army of Me", artist: "Björk", station: "Radio X", at: 20), dedupe: false)
        _ = try index.add(Self.entry("/m/3.mp3", title: "Song", artist: "Other", station: "Björkradio", at: 5), dedupe: false)
        _ = try index.add(Self.entry("/m/4.mp3", title: "Unrelated", artist: "Someone", station: "Jazz", at: 30), dedupe: false)
        #expect(try index.search("björk").map(\.path) == ["/m/2.mp3", "/m/1.mp3", "/m/3.mp3"])
        #expect(try index.search("RADIO x").map(\.path) == ["/m/2.mp3"])
        #expect(try index.search("%").isEmpty)
        #expect(try index.list().map(\.path) == ["/m/4.mp3", "/m/2.mp3", "/m/1.mp3", "/m/3.mp3"])
    }

    @Test func pruneDropsOnlyTheEntriesWhoseFilesAreGone() throws {
        let (index, folder) = try Self.temporaryIndex()
        defer { try? FileManager.default.removeItem(at: folder) }
        let kept = folder.appendingPathComponent("kept.mp3").path
        _ = FileManager.default.createFile(atPath: kept, contents: Data([1]))
        _ = try index.add(Self.entry(kept, title: "Here"), dedupe: false)
        _ = try index.add(Self.entry(folder.appendingPathComponent("gone.mp3").path, title: "Gone"), dedupe: false)
        #expect(try index.prune().map(\.title) == ["Gone"])
        #expect(try index.list().map(\.path) == [kept])
    }

    @Test func aFullDiskIsATypedErrorAndLosesNoEntry() throws {
        let (index, folder) = try Self.temporaryIndex()
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try index.add(Self.entry("/m/first.mp3", title: "First"), dedupe: false)
        try index.limitPagesForTests()
        let long = String(repeating: "x", count: 200_000)
        #expect {
            _ = try index.add(Self.entry("/m/second.mp3", title: long), dedupe: false)
        } throws: { ($0 as? LibraryError)?.kind == .full }
        #expect(try index.list().map(\.path) == ["/m/first.mp3"])
        #expect(try index.integrityCheck() == "ok")
    }

    /// `--json` says every column: the fingerprint by its length, and when the entry was added.
    @Test func jsonListsEveryColumnTheFingerprintByItsLength() throws {
        let (index, folder) = try Self.temporaryIndex()
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try index.add(Self.entry("/m/a.mp3", title: "A", fingerprint: Fingerprint(values: [1, 2, 3])), dedupe: false)
        _ = try index.add(Self.entry("/m/b.mp3", title: "B", at: 10), dedupe: false)
        let objects = try LibraryCatalog.jsonLines(try index.list()).map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.count == 2)
        let keys: Set<String> = ["id", "path", "station_id", "station_name", "title", "artist", "started_at", "seconds", "codec",
                                 "bitrate", "complete", "fingerprint_values", "loudness", "gain", "peak", "added_at"]
        for object in objects { #expect(Set(object.keys) == keys, "\(object.keys.sorted())") }
        #expect(objects.map { $0["fingerprint_values"] as? Int } == [nil, 3])
        #expect(objects.allSatisfy { ($0["added_at"] as? String)?.hasSuffix("Z") == true })
    }

    /// Real music through two "stations": the same song cut seconds apart and encoded at other
    /// bitrates is the same recording; another song under the same title is not; a partial
    /// copy never displaces a complete one, and a complete one replaces a partial copy.
    @Test(.enabled(if: RealMusic.isAvailable)) func dedupeTellsRecordingsApartByTheirAudio() async throws {
        let (index, folder) = try Self.temporaryIndex()
        defer { try? FileManager.default.removeItem(at: folder) }
        func fingerprint(_ file: String, from start: Double, seconds: Double, bitrate: Int) async throws -> (String, Fingerprint) {
            let path = folder.appendingPathComponent("\(UUID().uuidString).mp3").path
            try Data(try await RealMusic.frames(file, from: start, seconds: seconds, bitrate: bitrate)).write(to: URL(fileURLWithPath: path))
            return (path, try AudioFileFingerprint.read(path: path, wholeFile: false).fingerprint)
        }
        let (stationA, a) = try await fingerprint(RealMusic.frontiers, from: 30, seconds: 70, bitrate: 128)
        let (stationB, b) = try await fingerprint(RealMusic.frontiers, from: 32.3, seconds: 66, bitrate: 96)
        let (other, c) = try await fingerprint(RealMusic.machineWars, from: 30, seconds: 70, bitrate: 128)
        let (partial, d) = try await fingerprint(RealMusic.frontiers, from: 50, seconds: 30, bitrate: 128)
        #expect(a.values.count > 500)

        #expect(try index.add(Self.entry(stationA, title: "Frontiers", fingerprint: a), dedupe: true) == .added(replacing: []))
        guard case .duplicate(let earlier, let alignment) = try index.add(Self.entry(stationB, title: "Something Else", fingerprint: b), dedupe: true) else {
            Issue.record("the same song under another title was kept")
            return
        }
        #expect(earlier.path == stationA)
        #expect(alignment.bitErrorRate < 0.2)
        #expect(try index.add(Self.entry(other, title: "Frontiers", fingerprint: c), dedupe: true) == .added(replacing: []))
        guard case .duplicate = try index.add(Self.entry(partial, title: "Frontiers", complete: false, fingerprint: d), dedupe: true) else {
            Issue.record("a partial copy of a kept song was kept")
            return
        }

        // A fresh library where the partial copy came first: the complete one replaces it.
        let (second, secondFolder) = try Self.temporaryIndex()
        defer { try? FileManager.default.removeItem(at: secondFolder) }
        let partialEntry = Self.entry(partial, title: "Frontiers", complete: false, fingerprint: d)
        #expect(try second.add(partialEntry, dedupe: true) == .added(replacing: []))
        guard case .added(let replaced) = try second.add(Self.entry(stationA, title: "Frontiers", fingerprint: a), dedupe: true) else {
            Issue.record("a complete song was refused for a partial copy")
            return
        }
        #expect(replaced.map(\.path) == [partial])
        #expect(try second.list().map(\.path) == [stationA])
    }
}
