@testable import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import AirtapTestSupport
import Foundation
import TestStation
import Testing

@Suite("cron expressions")
struct CronExpressionTests {
    @Test("What Vixie cron and cronie both accept", arguments: [
        "0 22 * * *", "*/15 * * * *", "0 9-17/2 * * 1-5", "0 22 * * mon-fri", "30 6 1,15 jan,JUL *",
        "0 0 * * 7", "0 0 * * sun", "5,10-20/5,59 0-23 1-31 1-12 0-7", "@daily", "@reboot", "@hourly",
    ])
    func accepts(text: String) throws {
        #expect(try CronExpression(text).text == text)
    }

    @Test func normalizesWhiteSpace() throws {
        #expect(try CronExpression("  0   22\t* * *  ").text == "0 22 * * *")
    }

    @Test("What cron would refuse", arguments: [
        ("", "5 fields"), ("* * * *", "not 4"), ("0 22 * * * rm -rf", "not 7"),
        ("60 * * * *", "minute field '60': 60 is outside 0-59"),
        ("* 24 * * *", "hour field"), ("* * 0 * *", "day-of-month field"), ("* * * 13 *", "month field"),
        ("* * * * 8", "day-of-week field"), ("*/0 * * * *", "step"), ("5-1 * * * *", "backwards"),
        ("a * * * *", "'a' is not a number"), ("1,,2 * * * *", "empty list item"), ("- * * * *", "not a number"),
        ("1- * * * *", "not a number"), ("*/ * * * *", "step"), ("5/10 * * * *", "a step needs a range"),
        ("+5 * * * *", "not a number"), ("* * * foo *", "such as 'jan'"), ("* * * * mon-sun", "backwards"),
        ("1-2-3 * * * *", "not a number or a range"), ("*/2/3 * * * *", "more than one '/'"),
        ("@sometimes", "unknown cron shortcut"), ("@daily *", "not 2"),
    ])
    func refuses(text: String, expected: String) {
        let error = #expect(throws: CronExpressionError.self) { try CronExpression(text) }
        #expect(error?.description.contains(expected) == true, "\(String(describing: error))")
        #expect(error?.description.contains("\n") == false)
    }
}

@Suite("crontab block merge")
struct CrontabBlockTests {
    let block = ["# From /s.json", "0 22 * * * /bin/airtap record a --for 2h"]
    var rendered: String { ([CrontabBlock.beginMarker] + block + [CrontabBlock.endMarker]).map { $0 + "\n" }.joined() }

    @Test func intoAnEmptyTable() throws {
        #expect(try CrontabBlock.merge(block, into: "") == rendered)
    }

    @Test func appendsAfterForeignLinesAndKeepsThem() throws {
        let table = "MAILTO=me@example.org\n# my backup\n0 3 * * * /usr/local/bin/backup  --all\n"
        let merged = try CrontabBlock.merge(block, into: table)
        #expect(merged == table + "\n" + rendered)
        // Without a final newline, the last foreign line gets one (cron ignores it otherwise).
        #expect(try CrontabBlock.merge(block, into: String(table.dropLast())) == table + "\n" + rendered)
        // After a blank line, no second one.
        #expect(try CrontabBlock.merge(block, into: table + "\n") == table + "\n" + rendered)
    }

    @Test func replacesOnlyItsOwnBlockInPlace() throws {
        let before = "# top\n@reboot /usr/bin/foo\n\n"
        let after = "\n0 1 * * * /usr/bin/bar # END airtap is not a marker when not alone\n  \n"
        let old = CrontabBlock.beginMarker + "\n5 5 * * * old line\n" + CrontabBlock.endMarker + "\n"
        let merged = try CrontabBlock.merge(block, into: before + old + after)
        #expect(merged == before + rendered + after)
        // Idempotent: a second run changes nothing.
        #expect(try CrontabBlock.merge(block, into: merged) == merged)
        #expect(CrontabBlock.lines(in: merged) == block)
    }

    @Test func anOlderMarkerWordingIsStillFound() throws {
        let table = "x\n# BEGIN airtap\nold\n  # END airtap  \ny\n"
        #expect(try CrontabBlock.merge(block, into: table) == "x\n" + rendered + "y\n")
    }

    @Test func noLinesRemoveTheBlock() throws {
        let table = "a\n" + rendered + "b\n"
        #expect(try CrontabBlock.merge([], into: table) == "a\nb\n")
        #expect(try CrontabBlock.merge([], into: "a\n") == "a\n")
        #expect(try CrontabBlock.merge([], into: "") == "")
    }

    @Test func twoBlocksBecomeOneAtTheFirstPlace() throws {
        let table = "a\n" + rendered + "b\n" + rendered + "c\n"
        #expect(try CrontabBlock.merge(["new"], into: table)
                == "a\n\(CrontabBlock.beginMarker)\nnew\n\(CrontabBlock.endMarker)\nb\nc\n")
    }

    @Test("A lone marker is an error, not a guess", arguments: [
        "a\n\(CrontabBlock.beginMarker)\nb\n",
        "a\n\(CrontabBlock.endMarker)\nb\n",
        "\(CrontabBlock.beginMarker)\n\(CrontabBlock.beginMarker)\n\(CrontabBlock.endMarker)\n",
    ])
    func loneMarkers(table: String) {
        let error = #expect(throws: AirtapError.self) { try CrontabBlock.merge(["x"], into: table) }
        guard case .configuration(let message) = error else {
            Issue.record("expected a configuration error, got \(String(describing: error))")
            return
        }
        #expect(message.contains("crontab -e") && message.contains("line "))
    }
}

@Suite("crontab lines")
struct CrontabPlanTests {
    let plan = CrontabPlan(airtapPath: "/opt/air tap/airtap", stationsPath: "/home/me/.config/airtap/stations.json",
                           outputDirectory: "/srv/radio 100%")

    /// Through JSON, as users write it (Station.Schedule has no public initializer).
    func station(_ id: String, cron: String = "0 22 * * *", duration: String = "90m") throws -> Station {
        let object: [String: Any] = ["id": id, "url": "http://127.0.0.1:9/", "schedule": ["cron": cron, "duration": duration]]
        return try JSONDecoder().decode(Station.self, from: JSONSerialization.data(withJSONObject: object))
    }

    @Test func quotesPathsAndEscapesPercentSigns() throws {
        let recording = try #require(try ScheduledRecording(try station("groovesalad")))
        #expect(try plan.line(for: recording) == """
            0 22 * * * '/opt/air tap/airtap' record groovesalad --for 1h30m \
            --stations /home/me/.config/airtap/stations.json --out '/srv/radio 100\\%' \
            --log '/srv/radio 100\\%/airtap-groovesalad.log'
            """)
    }

    @Test func awkwardIDs() throws {
        let quote = try #require(try ScheduledRecording(try station("it's")))
        #expect(try plan.line(for: quote).contains(" record 'it'\\''s' --for "))
        #expect(try plan.line(for: quote).contains("/airtap-it'\\''s.log'"))
        let dash = try #require(try ScheduledRecording(try station("-x")))
        #expect(try plan.line(for: dash).hasSuffix("/airtap-x.log' -- -x"))
        let slash = try #require(try ScheduledRecording(try station("../up")))
        #expect(try plan.line(for: slash).contains("/srv/radio 100\\%/airtap-up.log"))
    }

    @Test func malformedSchedulesNameTheStation() throws {
        let cases: [(Station, String)] = [
            (try station("a", cron: "0 25 * * *"), "station 'a': schedule: hour field '25'"),
            (try station("b", duration: "soon"), "station 'b': schedule: 'soon' is not a duration"),
        ]
        for (station, expected) in cases {
            let error = #expect(throws: AirtapError.self) { try ScheduledRecording(station) }
            #expect(error?.description.contains(expected) == true, "\(String(describing: error))")
            #expect(error?.exitCode == 1)
        }
        #expect(try ScheduledRecording(Station(id: "none", name: "n", urls: ["http://x/"])) == nil)
    }

    @Test("A control character in any path or id that would go into the crontab is refused",
          arguments: [("/opt/airtap\n* * * * * touch /tmp/pwned", "/s.json", "/out", "the path of airtap"),
                      ("/opt/airtap", "/s.json\n* * * * * touch /tmp/pwned", "/out", "the stations file path"),
                      ("/opt/airtap", "/s.json", "/out\r* * * * * touch /tmp/pwned", "the --out folder"),
                      ("/opt/airtap", "/s.json", "/out\u{2028}x", "the --out folder"),
                      ("/opt/airtap", "/s.json", "/out\u{7}", "the --out folder")])
    func controlCharactersInPaths(airtap: String, stations: String, out: String, expected: String) throws {
        let plan = CrontabPlan(airtapPath: airtap, stationsPath: stations, outputDirectory: out)
        let recording = try #require(try ScheduledRecording(try station("night")))
        for attempt in [{ _ = try plan.lines(for: [recording]) }, { _ = try plan.line(for: recording) }] {
            let error = #expect(throws: AirtapError.self) { try attempt() }
            #expect(error?.exitCode == 1)
            #expect(error?.description.hasPrefix("\(expected) has a control character") == true, "\(String(describing: error))")
            #expect(error?.description.contains("\n") == false)
        }
    }

    /// What cron does to a command before sh runs it (crontab(5)): an unescaped `%` ends the
    /// command, `\%` becomes `%`. `alsoBackslashes` is the stricter variant that unescapes `\\` too.
    static func cronUnescaped(_ command: String, alsoBackslashes: Bool) -> String {
        var result = "", escaped = false
        for character in command {
            if escaped {
                if character == "%" || (alsoBackslashes && character == "\\") { result.removeLast() }
                result.append(character)
                escaped = false
                continue
            }
            if character == "%" { break }
            if character == "\\" { escaped = true }
            result.append(character)
        }
        return result
    }

    /// What `sh -c command` printed. The script it runs was just written: a process another test
    /// spawns at that moment holds a copy of the writing descriptor until its exec, and an exec of
    /// the script then fails with ETXTBSY ("Text file busy"). That passes; it is tried again.
    static func runShell(_ command: String) throws -> String {
        for _ in 0..<50 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", command]
            let output = ChildProcesses.pipe(), errors = ChildProcesses.pipe()
            process.standardOutput = output
            process.standardError = errors
            try ChildProcesses.spawn(process)
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard complaint.contains("Text file busy") else { return String(decoding: printed, as: UTF8.self) }
            usleep(20_000)
        }
        throw IcecastServer.Failure("sh: the script stayed busy: \(command)")
    }

    @Test("A station id with \\% and quotes reaches airtap unchanged through cron and sh")
    func percentAndBackslashSurviveCronAndShell() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // Stands in for airtap: prints each argument it got on a line of its own.
        let echo = folder.appendingPathComponent("args")
        try "#!/bin/sh\nprintf '%s\\n' \"$@\"\n".write(to: echo, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: echo.path)
        let tricky = ["a\\%b", "c\\\\%d%", "it's\\", "50%\\'x", "\\"]
        let plan = CrontabPlan(airtapPath: echo.path, stationsPath: "/s 100%.json", outputDirectory: "/out\\%")
        for id in tricky {
            let recording = try #require(try ScheduledRecording(try station(id)))
            let line = try plan.line(for: recording)
            let command = String(line.dropFirst("0 22 * * * ".count))
            for strict in [false, true] {
                let output = try Self.runShell(Self.cronUnescaped(command, alsoBackslashes: strict))
                let arguments = output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
                #expect(arguments.first == "record" && arguments.dropFirst().first == id, "\(line) -> \(arguments)")
                #expect(arguments.contains("/s 100%.json") && arguments.contains("/out\\%"), "\(line) -> \(arguments)")
            }
        }
    }

    @Test func linesAndLimits() throws {
        let catalog = StationCatalog(stations: [try station("a"), Station(id: "b", name: "b", urls: ["http://x/"]), try station("c", cron: "@daily")],
                                     source: "/s.json")
        let recordings = try ScheduledRecording.all(in: catalog)
        #expect(recordings.map(\.stationID) == ["a", "c"])
        let lines = try plan.lines(for: recordings)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("# From /home/me/.config/airtap/stations.json"))
        #expect(lines[2].hasPrefix("@daily '/opt/air tap/airtap' record c "))
        #expect(try plan.lines(for: []) == [])

        let deep = CrontabPlan(airtapPath: "/" + String(repeating: "d/", count: 500) + "airtap",
                               stationsPath: "/s.json", outputDirectory: "/out")
        #expect(throws: AirtapError.self) { try deep.lines(for: recordings) }
    }
}

@Suite("recording lock")
struct RecordingLockTests {
    /// A fresh output folder; the station records into its "Station".
    func root() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("airtap-lock-\(UUID().uuidString)").path
    }

    // Open file description locks conflict between two opens of the lock file in one process
    // just as between two processes.
    @Test func aSecondAcquisitionFailsUntilTheFirstIsReleased() throws {
        let root = root(), folder = root + "/Station"
        var first: RecordingLock? = try RecordingLock.acquire(folder: "Station", below: root, stationID: "demo", wait: false)
        #expect(first?.path == folder + "/.airtap-demo.lock")
        let pid = try String(contentsOfFile: folder + "/.airtap-demo.lock", encoding: .utf8)
        #expect(pid == "\(getpid())\n")
        #expect {
            try RecordingLock.acquire(folder: "Station", below: root, stationID: "demo", wait: false)
        } throws: { error in
            guard let error = error as? AirtapError, case .alreadyRunning(let message) = error else { return false }
            return error.exitCode == 4 && message.contains("demo") && message.contains("pid \(getpid())")
                && message.contains("--wait")
        }
        // Another station in the same folder has its own lock.
        let other = try RecordingLock.acquire(folder: "Station", below: root, stationID: "other", wait: false)
        first = nil
        // A child another test spawns at this moment holds a copy of every descriptor (the lock's
        // too, close-on-exec or not) until it calls exec, and so the lock; tries until that
        // child has called exec (a loaded machine can take a while to run it that far).
        var again = try? RecordingLock.acquire(folder: "Station", below: root, stationID: "demo", wait: false)
        let deadline = Date().addingTimeInterval(30)
        while again == nil && Date() < deadline {
            usleep(20_000)
            again = try? RecordingLock.acquire(folder: "Station", below: root, stationID: "demo", wait: false)
        }
        #expect(again != nil)
        withExtendedLifetime((other, again, first)) {}
    }

    @Test func aFleetHoldsOneDescriptorForAllItsLocks() throws {
        let root = root()
        let table = try RecordingLockTable.open(root: root)
        var locks = try (0..<50).map { try table.acquire(folder: "Station \($0)", stationID: "s\($0)", wait: false) }
        let opened = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
        }.filter { $0.hasPrefix(root) }
        #expect(opened == [root + "/.airtap.lock"])
        // The same station twice in one table is refused at once, even waiting: it would wait for itself.
        for wait in [false, true] {
            #expect(throws: AirtapError.self) { try table.acquire(folder: "Station 7", stationID: "s7", wait: wait) }
        }
        // Every lock is seen from outside the table, and each is let go on its own.
        #expect(RecordingLock.isHeld(folder: "Station 7", lockName: ".airtap-s7.lock", below: root))
        #expect(!RecordingLock.isHeld(folder: "Station 7", lockName: ".airtap-s8.lock", below: root))
        #expect(throws: AirtapError.self) { try RecordingLock.acquire(folder: "Station 7", below: root, stationID: "s7", wait: false) }
        locks.remove(at: 7)
        #expect(!RecordingLock.isHeld(folder: "Station 7", lockName: ".airtap-s7.lock", below: root))
        #expect(RecordingLock.isHeld(folder: "Station 8", lockName: ".airtap-s8.lock", below: root))
        let again = try table.acquire(folder: "Station 7", stationID: "s7", wait: false)
        withExtendedLifetime((locks, again)) {}
    }

    @Test func waitingBlocksUntilTheHolderLetsGo() async throws {
        let root = root()
        var holder: RecordingLock? = try RecordingLock.acquire(folder: "Station", below: root, stationID: "demo", wait: false)
        // A Dispatch thread, not the cooperative pool: the waiting lock blocks it.
        async let acquiredAt: Date = withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    let lock = try RecordingLock.acquire(folder: "Station", below: root, stationID: "demo", wait: true)
                    continuation.resume(returning: withExtendedLifetime(lock) { Date() })
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        // The event: the kernel lists the waiter as blocked on the lock (/proc/locks, "->").
        let inode = try #require(try FileManager.default.attributesOfItem(atPath: root + "/.airtap.lock")[.systemFileNumber] as? Int)
        try await waitFor("the second acquisition to block on the lock") {
            let locks = (try? String(contentsOfFile: "/proc/locks", encoding: .utf8)) ?? ""
            return locks.split(separator: "\n").contains { $0.contains("-> OFDLCK") && $0.contains(":\(inode) ") }
        }
        #expect(holder != nil)
        let released = Date()
        holder = nil
        #expect(try await acquiredAt >= released)
    }

    @Test func hostileIDsStayInTheFolder() throws {
        let root = root()
        let lock = try RecordingLock.acquire(folder: "Station", below: root, stationID: "../../x", wait: false)
        #expect(lock.path == root + "/Station/.airtap-x.lock")
        #expect(FileManager.default.fileExists(atPath: lock.path))
    }
}

@Suite("airtap schedule")
struct ScheduleCommandTests {
    /// Stands in for crontab(1): the table lives in a file beside the script, and each call is logged.
    func fakeCrontab(in folder: URL, failing: Bool = false) throws -> (script: String, table: URL, calls: URL) {
        let table = folder.appendingPathComponent("table"), calls = folder.appendingPathComponent("calls")
        let script = folder.appendingPathComponent("fake-crontab")
        let body = failing ? "echo 'crontab: cannot open the table' >&2; exit 2" : """
            case "$1" in
              -l) if [ -f '\(table.path)' ]; then cat '\(table.path)'; else echo "no crontab for $(id -un)" >&2; exit 1; fi ;;
              -) cat > '\(table.path)' ;;
              *) exit 2 ;;
            esac
            """
        try "#!/bin/sh\necho \"$*\" >> '\(calls.path)'\n\(body)\n".write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        return (script.path, table, calls)
    }

    func stations(_ entries: String) -> String { "{\"stations\": [\(entries)]}" }

    @Test("--install keeps foreign lines and replaces only its own block on a second run")
    func installTwice() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: stations("""
            {"id": "night", "name": "Night FM", "url": "http://127.0.0.1:9/a", "schedule": {"cron": "0 22 * * *", "duration": "2h"}},
            {"id": "plain", "url": "http://127.0.0.1:9/b"},
            {"id": "morning", "url": "http://127.0.0.1:9/c", "schedule": {"cron": "30 6 * * mon-fri", "duration": "90m"}}
            """))
        defer { try? FileManager.default.removeItem(at: folder) }
        let crontab = try fakeCrontab(in: folder)
        let environment = ["AIRTAP_CRONTAB": crontab.script]

        // No table yet ("no crontab for user", exit 1) is an empty one.
        let first = try await AirtapBinary.run(["schedule", "--install"], in: folder, environment: environment)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("installed 2 recordings"))
        let firstTable = try String(contentsOf: crontab.table, encoding: .utf8)
        let lines = try #require(CrontabBlock.lines(in: firstTable))
        #expect(lines.count == 3)
        // The command reports real paths (/proc/self/exe, getcwd); .build/debug is a symlink.
        let airtap = AirtapBinary.directory.appendingPathComponent("airtap").resolvingSymlinksInPath().path
        let base = folder.resolvingSymlinksInPath()
        let out = base.appendingPathComponent("recordings").path
        let stationsPath = base.appendingPathComponent("stations.json").path
        #expect(lines[1] == "0 22 * * * \(airtap) record night --for 2h --stations \(stationsPath) --out \(out) --log \(out)/airtap-night.log")
        #expect(lines[2].hasPrefix("30 6 * * mon-fri \(airtap) record morning --for 1h30m "))
        #expect(FileManager.default.fileExists(atPath: out))

        // The user adds lines around the block; the schedule changes.
        let foreignTop = "MAILTO=\"\"\n# nightly backup\n0 3 * * * /usr/local/bin/backup --all >/dev/null 2>&1\n"
        let foreignBottom = "\n@reboot /usr/bin/true\n"
        try (foreignTop + firstTable + foreignBottom).write(to: crontab.table, atomically: true, encoding: .utf8)
        try stations("""
            {"id": "night", "url": "http://127.0.0.1:9/a", "schedule": {"cron": "0 23 * * *", "duration": "1h"}}
            """).write(to: folder.appendingPathComponent("stations.json"), atomically: true, encoding: .utf8)

        let second = try await AirtapBinary.run(["schedule", "--install", "--out", "elsewhere"], in: folder, environment: environment)
        #expect(second.status == 0, "\(second.stderr)")
        let secondTable = try String(contentsOf: crontab.table, encoding: .utf8)
        let elsewhere = base.appendingPathComponent("elsewhere").path
        let block = try #require(CrontabBlock.lines(in: secondTable))
        #expect(block.dropFirst() == ["0 23 * * * \(airtap) record night --for 1h --stations \(stationsPath) --out \(elsewhere) --log \(elsewhere)/airtap-night.log"])
        #expect(secondTable.hasPrefix(foreignTop + CrontabBlock.beginMarker + "\n"))
        #expect(secondTable.hasSuffix(CrontabBlock.endMarker + "\n" + foreignBottom))
        #expect(secondTable.components(separatedBy: CrontabBlock.beginMarker).count == 2)
        #expect(try String(contentsOf: crontab.calls, encoding: .utf8) == "-l\n-\n-l\n-\n")
    }

    @Test("Without --install it prints the block and leaves the crontab alone")
    func printOnly() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: stations("""
            {"id": "night", "url": "http://127.0.0.1:9/a", "schedule": {"cron": "@daily", "duration": "30m"}}
            """))
        defer { try? FileManager.default.removeItem(at: folder) }
        let crontab = try fakeCrontab(in: folder)
        let result = try await AirtapBinary.run(["schedule"], in: folder, environment: ["AIRTAP_CRONTAB": crontab.script])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines.first == CrontabBlock.beginMarker)
        #expect(result.stdoutLines.last == CrontabBlock.endMarker)
        #expect(result.stdoutLines.contains { $0.hasPrefix("@daily /") && $0.contains(" record night --for 30m ") })
        #expect(!FileManager.default.fileExists(atPath: crontab.calls.path))
    }

    @Test("A bad schedule exits 1 naming the station; a failing crontab exits 3")
    func failures() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: stations("""
            {"id": "night", "url": "http://127.0.0.1:9/a", "schedule": {"cron": "0 22 * *", "duration": "2h"}}
            """))
        defer { try? FileManager.default.removeItem(at: folder) }
        let bad = try await AirtapBinary.run(["schedule"], in: folder)
        #expect(bad.status == 1)
        #expect(bad.stderr.hasPrefix("airtap: station 'night': schedule: a cron expression has 5 fields"), "\(bad.stderr)")

        try stations("""
            {"id": "night", "url": "http://127.0.0.1:9/a", "schedule": {"cron": "0 22 * * *", "duration": "2h"}}
            """).write(to: folder.appendingPathComponent("stations.json"), atomically: true, encoding: .utf8)
        // A newline in --out would start a crontab line of its own: refused before the crontab is touched.
        let injecting = try fakeCrontab(in: folder)
        let injected = try await AirtapBinary.run(["schedule", "--install", "--out", "rec\n* * * * * touch /tmp/airtap-pwned #"],
                                            in: folder, environment: ["AIRTAP_CRONTAB": injecting.script])
        #expect(injected.status == 1)
        #expect(injected.stderr.hasPrefix("airtap: the --out folder has a control character"), "\(injected.stderr)")
        #expect(injected.stderr.split(separator: "\n").count == 1)
        #expect(!FileManager.default.fileExists(atPath: injecting.calls.path))
        #expect(!FileManager.default.fileExists(atPath: injecting.table.path))

        let crontab = try fakeCrontab(in: folder, failing: true)
        let failed = try await AirtapBinary.run(["schedule", "--install"], in: folder, environment: ["AIRTAP_CRONTAB": crontab.script])
        #expect(failed.status == 3)
        #expect(failed.stderr.contains("cannot open the table"), "\(failed.stderr)")
        #expect(failed.stderr.split(separator: "\n").count == 1)
    }
}
