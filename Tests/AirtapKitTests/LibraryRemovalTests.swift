@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapStations
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// What `--dedupe` may remove: only a partial track in `STATION/incomplete/` of the folder it
/// records into, every link resolved. Index rows come from `library scan` and from anyone who
/// can write the index; none of them is a permission to delete.
@Suite struct LibraryRemovalTests {
    static func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    @Test func onlyAFileInStationIncompleteInsideTheRecordingFolderIsAPartialCopy() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.path + "/out"
        let genuine = out + "/Station/incomplete/Song.mp3"
        try Self.write("audio", to: genuine)
        try Self.write("precious", to: folder.path + "/victim.txt")
        try Self.write("precious", to: folder.path + "/out-other/Station/incomplete/Song.mp3")
        try Self.write("precious", to: folder.path + "/Music/Album/incomplete/My song.mp3")
        try Self.write("precious", to: out + "/Station/Song.mp3")
        try FileManager.default.createDirectory(atPath: out + "/Linked", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out + "/Linked/incomplete", withDestinationPath: folder.path + "/Music/Album/incomplete")
        try FileManager.default.createSymbolicLink(atPath: out + "/Station/incomplete/planted.mp3", withDestinationPath: folder.path + "/victim.txt")

        let refused = [
            folder.path + "/Music/Album/incomplete/My song.mp3",       // a scanned file with incomplete/ in its path
            out + "/Station/incomplete/../../../victim.txt",            // a row that climbs out
            out + "/Station/incomplete/../Song.mp3",                    // a complete track of the folder
            folder.path + "/out-other/Station/incomplete/Song.mp3",     // a folder whose name only starts like it
            out + "/Linked/incomplete/My song.mp3",                     // a link out of the folder
            out + "/Station/incomplete/planted.mp3",                    // a link to a file outside
        ]
        for path in refused {
            #expect(RecordedPartialCopy(path: path, recordingFolder: out) == nil, "\(path)")
        }
        // The recording folder named through a link, and a path with `.` in it, still match.
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/out-link", withDestinationPath: out)
        let copy = try #require(RecordedPartialCopy(path: out + "/Station/./incomplete/Song.mp3", recordingFolder: folder.path + "/out-link"))
        #expect(copy.remove())
        #expect(!FileManager.default.fileExists(atPath: genuine))
        for path in refused {
            #expect(FileManager.default.fileExists(atPath: path), "\(path)")
        }
    }

    /// The scenario from the field, through `airtap`: `library scan ~/Music` of a folder with an
    /// `incomplete/` part, a row naming `.../incomplete/../../../victim.txt`, then
    /// `record --dedupe` of a station playing the song. Only the partial copy inside `--out`
    /// goes; the others keep their files and their entries.
    @Test(.enabled(if: RealMusic.isAvailable)) func dedupeRemovesNoFileOutsideTheRecordingFolder() async throws {
        let intro = try await RealMusic.frames(RealMusic.timeToStrike, from: 100, seconds: 8, bitrate: 128)
        let outro = try await RealMusic.frames(RealMusic.timeToStrike, from: 200, seconds: 8, bitrate: 128)
        let song = try await RealMusic.frames(RealMusic.frontiers, from: 30, seconds: 60, bitrate: 128)
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = folder.path + "/library.sqlite"
        let out = folder.path + "/out"
        let scanned = folder.path + "/Music/Album/incomplete/My song.mp3"
        let ownPartial = out + "/Other Station/incomplete/Frontiers.mp3"
        for path in [scanned, ownPartial] {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(song.prefix(song.count / 2)).write(to: URL(fileURLWithPath: path))
        }
        try Self.write("precious", to: folder.path + "/victim.txt")
        for scan in [folder.path + "/Music", out] {
            let result = try await AirtapBinary.run(["library", "scan", scan, "--library", library])
            #expect(result.status == 0, "\(result.stderr)")
        }
        let index = try LibraryIndex(path: library)
        let fingerprint = try AudioFileFingerprint.read(path: scanned, wholeFile: false).fingerprint
        let climbing = out + "/Other Station/incomplete/../../../victim.txt"
        _ = try index.add(LibraryEntry(path: climbing, title: "Frontiers", startedAt: Date(), seconds: 30, codec: "MP3",
                                       isComplete: false, fingerprint: fingerprint), dedupe: false)
        #expect(try index.list().filter { !$0.isComplete }.count == 3)

        let server = try await LibraryRecordTests.serve(LibraryRecordTests.stream(song: song, title: "Alpha - Frontiers", intro: intro, outro: outro),
                                                        name: "Station A")
        defer { Task { try? await server.stop() } }
        let record = try await AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", out,
                                                 "--library", library, "--dedupe", "--log-level", "info"])
        #expect(record.status == 0, "\(record.stderr)")
        #expect(LibraryRecordTests.completeFiles(below: URL(fileURLWithPath: out)).count == 1, "\(record.stderr)")
        #expect(FileManager.default.fileExists(atPath: scanned), "a scanned file outside --out was removed: \(record.stderr)")
        #expect((try? String(contentsOfFile: folder.path + "/victim.txt", encoding: .utf8)) == "precious", "\(record.stderr)")
        #expect(!FileManager.default.fileExists(atPath: ownPartial), "the partial copy inside --out was kept: \(record.stderr)")
        let paths = Set(try index.list().map(\.path))
        #expect(paths.contains(scanned) && paths.contains(climbing) && !paths.contains(ownPartial), "\(paths)")
    }
}
