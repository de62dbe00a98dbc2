import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import Foundation
import TestStation
import Testing

/// Only a file airtap made is used as its index: another program's database is refused, not
/// migrated, and an index with a planted trigger or view is refused before anything runs.
@Suite struct LibrarySchemaTests {
    /// Runs `statements` on the database at `path` with Python's sqlite3 (another program).
    static func sqlite(_ path: String, _ statements: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()", path, statements]
        try ChildProcesses.spawn(process)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    static func rowCount(_ path: String, table: String) throws -> String {
        let process = Process()
        let output = ChildProcesses.pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM ' + sys.argv[2]).fetchone()[0])",
                             path, table]
        process.standardOutput = output
        try ChildProcesses.spawn(process)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func refuses(_ path: String) -> Bool {
        do {
            _ = try LibraryIndex(path: path)
            return false
        } catch {
            return error.kind == .unusable && !error.description.contains("\n")
        }
    }

    @Test func anotherProgramsDatabaseIsRefusedAndLeftByteForByte() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.path + "/notes.sqlite"
        try Self.sqlite(path, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('keep me');")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(Self.refuses(path))
        let list = try await AirtapBinary.run(["library", "list", "--library", path])
        #expect(list.status == 1, "\(list.stderr)")
        #expect(list.stderr.split(separator: "\n").count == 1 && list.stderr.contains("not an airtap index"), "\(list.stderr)")
        let scan = try await AirtapBinary.run(["library", "scan", folder.path, "--library", path])
        #expect(scan.status == 1, "\(scan.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "airtap wrote to another program's database")
        #expect(try Self.rowCount(path, table: "notes") == "1")
    }

    @Test(arguments: [
        "CREATE TRIGGER wipe AFTER INSERT ON tracks BEGIN DELETE FROM tracks WHERE id != NEW.id; END;",
        "CREATE VIEW everything AS SELECT * FROM tracks;",
        "CREATE TABLE extra (x);",
        "CREATE INDEX tracks_title ON tracks(title);",
        "DROP INDEX tracks_started_at;",
    ])
    func anIndexWithAnObjectAirtapDidNotMakeIsRefused(change: String) async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.path + "/library.sqlite"
        do {
            let index = try LibraryIndex(path: path)
            for name in ["a", "b"] {
                _ = try index.add(LibraryEntry(path: "/m/\(name).mp3", title: name, startedAt: Date(), seconds: 60), dedupe: false)
            }
        }
        // ANALYZE's statistics are SQLite's own: an index with them is still airtap's.
        try Self.sqlite(path, "ANALYZE;")
        #expect(!Self.refuses(path))
        try Self.sqlite(path, change)
        #expect(Self.refuses(path))
        let music = folder.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        try Data([0xFF, 0xFB, 0x90, 0x00]).write(to: music.appendingPathComponent("x.mp3"))
        let scan = try await AirtapBinary.run(["library", "scan", music.path, "--library", path])
        #expect(scan.status == 1 && scan.stderr.split(separator: "\n").count == 1, "\(scan.stderr)")
        #expect(try Self.rowCount(path, table: "tracks") == "2")
    }
}
