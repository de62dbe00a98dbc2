@testable import AirtapKit
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import Foundation
import Testing

/// airtap links only FoundationEssentials; these pin its small replacements for Foundation API
/// to what Foundation itself answers (the tests may link Foundation).
@Suite("Foundation replacements")
struct EssentialsTests {
    @Test("The airtap binary needs no libFoundation and no ICU (12 MB resident), only FoundationEssentials")
    func linksOnlyEssentials() throws {
        let binary = try Data(contentsOf: AirtapBinary.directory.appendingPathComponent("airtap"))
        // DT_NEEDED names, NUL-terminated in the dynamic string table.
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(binary.range(of: Data((library + "\0").utf8)) == nil, "airtap links \(library)")
        }
        #expect(binary.range(of: Data("libFoundationEssentials.so\0".utf8)) != nil)
    }

    @Test("formatted(decimals:) writes what String(format: \"%.Nf\") writes")
    func fixedDecimals() {
        let values: [Double] = [0, -0.0, 0.05, 0.25, 0.35, 1.05, 2.5, 9.95, 99.95, -1.25, 1234.5678, 1e20, 1e70,
                                0.1 + 0.2, .pi, -.pi, .infinity, -.infinity, .nan, .leastNonzeroMagnitude]
        for value in values {
            for decimals in 0...3 {
                #expect(value.formatted(decimals: decimals) == String(format: "%.\(decimals)f", value), "\(value) \(decimals)")
            }
        }
    }

    @Test("zeroPadded(width:) writes what String(format: \"%0Nd\") writes")
    func zeroPadding() {
        for value in [0, 5, 42, 123, 2026, -5, -42, Int.max, Int.min] {
            for width in 1...4 {
                #expect(value.zeroPadded(width: width) == String(format: "%0\(width)ld", value), "\(value) \(width)")
            }
        }
    }

    @Test("Trimming, padding and replacing match Foundation")
    func strings() {
        let samples = ["", "  ", " a b ", "\ta\t", "\u{00A0}x\u{3000}", "\nline\n", " \r\n mixed \u{2028}", "é ", "x"]
        for text in samples {
            #expect(text.trimmingSpaces() == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
            #expect(text.trimmingSpacesAndNewlines() == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.debugDescription)")
        }
        for text in ["", "id", "a-long-station-id", "čaj", "日本"] {
            #expect(text.padded(toLength: 10) == text.padding(toLength: 10, withPad: " ", startingAt: 0))
            #expect(text.padded(toLength: 2) == text.padding(toLength: 2, withPad: " ", startingAt: 0))
        }
        for text in ["it's", "''", "100%", "no quotes"] {
            let quoted: String = text.replacingEvery("'", with: "'\\''")
            let escaped: String = text.replacingEvery("%", with: "\\%")
            #expect(quoted == text.replacingOccurrences(of: "'", with: "'\\''"))
            #expect(escaped == text.replacingOccurrences(of: "%", with: "\\%"))
        }
        // A quote a combining mark follows is one Character with it; shell quoting must still see
        // the quote (Foundation's replacingOccurrences did not, nor does the standard library's replacing).
        #expect("'\u{301}x".replacingEvery("'", with: "'\\''") == "'\\''\u{301}x")
        #expect(CrontabPlan.shellQuoted("a'\u{301}; rm") == "'a'\\''\u{301}; rm'")
    }

    @Test("WallClock: fields and dates in UTC, and the local clock agrees with Calendar")
    func wallClock() throws {
        let date = WallClock.utc.date(year: 2026, month: 2, day: 29, hour: 25, minute: 0, second: 5)  // carries over
        let fields = WallClock.utc.fields(of: date)
        #expect([fields.year, fields.month, fields.day, fields.hour, fields.minute, fields.second] == [2026, 3, 2, 1, 0, 5] as [Int])
        #expect(WallClock.utc.internetDateTime(date) == "2026-03-02T01:00:05Z")

        let now = Date()
        let parts = Calendar.current.dateComponents([.year, .month, .day, .hour, .minute, .second], from: now)
        let local = WallClock.local.fields(of: now)
        #expect([local.year, local.month, local.day, local.hour, local.minute, local.second]
                == [parts.year, parts.month, parts.day, parts.hour, parts.minute, parts.second].map { $0 ?? -1 } as [Int])
        #expect(local.utcOffsetSeconds == TimeZone.current.secondsFromGMT(for: now))
        let stamp = ISO8601DateFormatter.string(from: now, timeZone: .current, formatOptions: [.withInternetDateTime])
        #expect(WallClock.local.internetDateTime(now) == stamp)
    }

    @Test("JSON syntax errors: the offset of the first byte that cannot be there", arguments: [
        ("{\"a\": [\"x\"]}", nil),
        ("{\"a\": [\"x\",]}", nil),  // JSONDecoder allows trailing commas
        ("{\"a\": [\"é\" \"b\"]}", 12),
        ("{\n\"a\": tru}", 10),
        ("{\"a\": [\"x\"]", 11),
        ("{\"a\": \"\\q\"}", 8),
        ("{\"a\": 01}", 7),
        ("{\"a\": -}", 7),
        ("{\"a\": 1.}", 8),
        ("{\"a\": 1} x", 9),
        ("", 0),
        ("{a: 1}", 1),
        ("[1 2]", 3),
    ] as [(String, Int?)])
    func jsonSyntax(text: String, offset: Int?) {
        #expect(JSONSyntax.firstErrorOffset(in: Array(text.utf8)) == offset)
    }

    @Test("A broken stations.json names line and column")
    func stationsPosition() {
        let text = "{\"stations\": [\n  {\"id\": \"a\",\n   \"url\": \"http://127.0.0.1:9/\" \"x\"}\n]}\n"
        #expect(throws: AirtapError.self) { try StationCatalog.parse(Data(text.utf8), source: "s.json") }
        do {
            _ = try StationCatalog.parse(Data(text.utf8), source: "s.json")
        } catch {
            #expect("\(error)".contains("line 3, column 33"), "\(error)")
        }
    }

    @Test("ChildProcess passes argv and environment as given and reports the exit status")
    func childArguments() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent("out").path
        let script = "printf '%s|' \"$0\" \"$1\" \"$2\" \"$AIRTAP_X\"; read line || printf 'eof'; exit 7"
        let child = try ChildProcess.spawn("/bin/sh", arguments: ["/bin/sh", "-c", script, "zero", "it's $HOME", "two words"],
                                           environment: ["AIRTAP_X": "ü \"q\""], stdin: .null, stdout: .file(output))
        let termination = child.wait()
        #expect(termination == ChildProcess.Termination(status: 7, wasSignaled: false))
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "zero|it's $HOME|two words|ü \"q\"|eof")
    }

    @Test("ChildProcess: no descriptor of ours leaks, signals are reported, a missing program throws")
    func childDescriptorsAndSignals() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let leaky = open(folder.appendingPathComponent("leaky").path, O_WRONLY | O_CREAT, 0o644)  // no O_CLOEXEC
        #expect(leaky >= 0)
        defer { close(leaky) }
        let output = folder.appendingPathComponent("fds").path
        // The shell says what its descriptor `leaky` is, if it has one.
        let listing = try ChildProcess.spawn("/bin/sh", arguments: ["/bin/sh", "-c", "readlink /proc/$$/fd/\(leaky); true"],
                                             environment: ["PATH": "/usr/bin:/bin"], stdin: .null, stdout: .file(output),
                                             stderr: .null)
        #expect(listing.wait().status == 0)
        let answer = try String(contentsOfFile: output, encoding: .utf8)
        #expect(!answer.contains("leaky"), "\(answer)")

        let killed = try ChildProcess.spawn("/bin/sh", arguments: ["/bin/sh", "-c", "kill -TERM $$"], environment: [:])
        #expect(killed.wait() == ChildProcess.Termination(status: SIGTERM, wasSignaled: true))

        #expect(throws: ChildProcess.SpawnError.self) {
            try ChildProcess.spawn("/nonexistent/airtap-test", arguments: ["x"], environment: [:])
        }
    }
}
