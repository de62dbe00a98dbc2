@testable import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// `serve --library` without `--out`: the page plays the files of the folders the library was
/// recorded into and scanned from, as the index keeps them.
@Suite("serve --library: the library's own folders")
struct ServeLibraryFoldersTests {
    @Test("Recorded into one folder, another scanned: every entry is on the page with its player, and its file comes back whole",
          .waitingForChildren)
    func foldersFromTheIndex() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (library, _, recorded) = try await ServeRecordingsTests.recordLibrary(in: folder)
        let first = try #require(recorded.first)
        let music = folder.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        let song = music.appendingPathComponent("song.mp3")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: first.path), to: song)
        let scan = try await AirtapBinary.run(["library", "scan", music.path, "--library", library])
        #expect(scan.status == 0, "\(scan.stderr)")
        let all = try LibraryIndex(path: library).list()
        let scanned = try #require(all.first { $0.path == song.path }, "\(all.map(\.path))")

        try await withStation(ServeStationsTests.realtime()) { station in
            let serve = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0", "--library", library])
            defer { if serve.process.isRunning { serve.process.terminate() } }
            let port = try await serve.listeningPort()
            let html = String(decoding: try await ServeRecordingsTests.fetch(port, "/recordings").body, as: UTF8.self)
            #expect(Set(ServeRecordingsTests.ids(html)) == Set(all.map(\.id)), "\(html)")
            #expect(html.components(separatedBy: "<audio ").count - 1 == all.count)
            for entry in [first, scanned] {
                let file = try await ServeRecordingsTests.fetch(port, "/recordings/file/\(entry.id)")
                #expect(file.status == 200, "\(entry.path): \(file.head)")
                #expect(file.body == [UInt8](try Data(contentsOf: URL(fileURLWithPath: entry.path))))
            }
            #expect(try await serve.terminate() == 0, "\(serve.stderr)")
        }
    }
}
