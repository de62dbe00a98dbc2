import AirtapKit
import AirtapStations
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// stations.json and playlists as files anyone may have written: edited safely by concurrent
/// `add`s, read with a bound, shown inert.
@Suite("stations.json and playlists: concurrent edits, links, sizes, terminal text")
struct StationsFileSafetyTests {
    @Test("12 concurrent processes adding 5 stations each: all 60 land, every add says so", .timeLimit(.minutes(5)))
    func concurrentAdds() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: "{\n  \"stations\": [\n    { \"id\": \"first\", \"url\": \"http://127.0.0.1:9/\" }\n  ]\n}\n")
        defer { try? FileManager.default.removeItem(at: folder) }
        let binary = AirtapBinary.directory.appendingPathComponent("airtap").path
        var processes: [Process] = []
        defer { for process in processes { ChildProcesses.terminate(process) } }
        for writer in 0..<12 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            // Each add must succeed: the first failure is this shell's exit status.
            let adds = (0..<5).map { "\"$0\" add w\(writer)s\($0) http://127.0.0.1:9/w\(writer)s\($0) || exit 1" }
            process.arguments = ["-c", adds.joined(separator: "\n"), binary]
            process.currentDirectoryURL = folder
            process.standardOutput = FileHandle.nullDevice
            processes.append(process)
        }
        for process in processes { try ChildProcesses.run(process) }
        for process in processes {
            #expect(await ChildProcesses.waitForExit(process, timeout: .seconds(240)))
            #expect(process.terminationStatus == 0)
        }
        let catalog = try StationCatalog.parse(try Data(contentsOf: folder.appendingPathComponent("stations.json")), source: "stations.json")
        let ids = Set(catalog.stations.map(\.id))
        let expected = Set((0..<12).flatMap { writer in (0..<5).map { "w\(writer)s\($0)" } } + ["first"])
        #expect(ids == expected, "missing: \(expected.subtracting(ids).sorted())")
    }

    @Test("Links planted at add's predictable names are never followed: their target stays, stations.json stays a file")
    func plantedLinks() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [] }"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let victim = folder.appendingPathComponent("victim.txt")
        try "precious".write(to: victim, atomically: true, encoding: .utf8)
        // The next process ids are the likely ones: a name made from the pid is predictable.
        let lastPID = Int((try String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8))
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        for pid in lastPID + 1...lastPID + 3000 {
            try? FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent(".stations.json.airtap-add-\(pid)").path,
                                                        withDestinationPath: victim.path)
        }
        for index in 0..<3 {
            let added = try await AirtapBinary.run(["add", "s\(index)", "http://127.0.0.1:9/s\(index)"], in: folder)
            #expect(added.status == 0, "\(added.stderr)")
        }
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious")
        let file = folder.appendingPathComponent("stations.json")
        let type = try FileManager.default.attributesOfItem(atPath: file.path)[.type] as? FileAttributeType
        #expect(type == .typeRegular)
        #expect(try StationCatalog.parse(try Data(contentsOf: file), source: "s").stations.map(\.id) == ["s0", "s1", "s2"])

        // The lock's name is known to all: a link there is refused, and its target stays.
        let lockFolder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [] }"#)
        defer { try? FileManager.default.removeItem(at: lockFolder) }
        try FileManager.default.createSymbolicLink(atPath: lockFolder.appendingPathComponent(".stations.json.lock").path,
                                                   withDestinationPath: victim.path)
        let refused = try await AirtapBinary.run(["add", "x", "http://127.0.0.1:9/x"], in: lockFolder)
        #expect(refused.status == 3, "\(refused.stderr)")
        #expect(refused.stderr.contains("symbolic link"), "\(refused.stderr)")
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious")
        #expect(try String(contentsOf: lockFolder.appendingPathComponent("stations.json"), encoding: .utf8) == #"{ "stations": [] }"#)
    }

    @Test("list shows station text with terminal escapes inert")
    func listIsInert() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [ { "id": "evil", "name": "Evil \u001b]0;pwned\u0007 \u001b[2J FM", "url": "http://127.0.0.1:9/" } ] }"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let list = try await AirtapBinary.run(["list"], in: folder)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(!list.stdout.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(list.stdout.debugDescription)")
        #expect(list.stdout.contains(#"Evil \e]0;pwned\x07 \e[2J FM"#), "\(list.stdout)")
    }

    @Test("A stations.json or playlist far over its limit (sparse, gigabytes) is refused by its size with one line, never read whole")
    func oversizedFiles() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let stations = folder.appendingPathComponent("big.json")
        #expect(FileManager.default.createFile(atPath: stations.path, contents: Data(#"{ "stations": [] }"#.utf8)))
        #expect(truncate(stations.path, 600 << 20) == 0)
        // A cap on the address space shows nothing big is read. ThreadSanitizer's shadow memory
        // cannot run under one (its build sets TSAN_OPTIONS): there only the refusal is checked.
        let cap = ProcessInfo.processInfo.environment["TSAN_OPTIONS"] == nil ? ["--as=\(3 << 30)"] : []
        let list = try await AirtapBinary.run(["list", "--stations", stations.path], in: folder, limits: cap)
        #expect(list.status == 1)
        #expect(list.stderr == "airtap: stations file \(stations.path) is larger than 16 MiB\n")
        let add = try await AirtapBinary.run(["add", "x", "http://127.0.0.1:9/", "--stations", stations.path], in: folder)
        #expect(add.status == 1)
        #expect(add.stderr == "airtap: stations file \(stations.path) is larger than 16 MiB\n")

        let playlist = folder.appendingPathComponent("big.pls")
        #expect(FileManager.default.createFile(atPath: playlist.path, contents: Data("[playlist]\nFile1=http://127.0.0.1:9/\n".utf8)))
        #expect(truncate(playlist.path, 600 << 20) == 0)
        let record = try await AirtapBinary.run(["record", playlist.path, "-t", "1s"], in: folder, limits: cap)
        #expect(record.status == 2)
        #expect(record.stderr == "airtap: \(playlist.path): playlist: larger than 256 KiB\n")

        // Not a file at all: read up to the limit, never on.
        let zero = try await AirtapBinary.run(["list", "--stations", "/dev/zero"], in: folder)
        #expect(zero.status == 1)
        #expect(zero.stderr == "airtap: stations file /dev/zero is larger than 16 MiB\n")
    }
}
