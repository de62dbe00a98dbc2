#if canImport(Glibc)
import Glibc
#endif
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// The tests' own children go when the test ends, however it ends.
@Suite("Children of a test")
struct ChildCleanupTests {
    struct Thrown: Error {}

    /// Alive: /proc/PID exists and is not a zombie (a reaper that never waits for orphans, as
    /// some containers' first process is, would leave a killed one as a zombie).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard let state = ChildProcesses.statFields(of: pid)?.first else { return false }
        return state != "Z"
    }

    /// A shell with a child of its own, in the shell's process group; the child's pid goes to `file`.
    static func shellWithChild(writingPidTo file: URL) -> Process {
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "sleep 600 & echo $! > '\(file.path)'; wait"]
        shell.standardOutput = FileHandle.nullDevice
        shell.standardError = FileHandle.nullDevice
        return shell
    }

    static func pid(in file: URL) async throws -> pid_t {
        var pid: pid_t?
        try await waitFor("the shell's child") {
            pid = (try? String(contentsOf: file, encoding: .utf8)).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return pid != nil
        }
        return pid ?? 0
    }

    @Test("A helper that throws mid-test leaves no child behind: an airtap serve, and a shell with its own child")
    func throwingHelper() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let grandchildFile = folder.appendingPathComponent("grandchild")
        var pids: [pid_t] = []
        try await withStation(ServeStationsTests.realtime()) { station in
            // The way a test's helpers are written: start, then fail before the test's own stop.
            func failingHelper() async throws {
                let serve = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0"])
                _ = try await serve.listeningPort()
                pids.append(serve.process.processIdentifier)
                let shell = Self.shellWithChild(writingPidTo: grandchildFile)
                try ChildProcesses.run(shell)
                defer { ChildProcesses.terminate(shell) }
                pids.append(shell.processIdentifier)
                pids.append(try await Self.pid(in: grandchildFile))
                #expect(pids.allSatisfy(Self.isAlive), "all three run before the helper throws")
                throw Thrown()
            }
            await #expect(throws: Thrown.self) { try await failingHelper() }
        }
        try #require(pids.count == 3)
        // The child and the shell are reaped by the time the helper returned; the shell's child,
        // killed with its group, goes to whoever reaps orphans.
        #expect(!Self.isAlive(pids[0]), "airtap serve still runs")
        #expect(!Self.isAlive(pids[1]), "the shell still runs")
        try await waitFor("the shell's child to go") { !Self.isAlive(pids[2]) }
    }

    @Test("The watchdog stops the children still running when the test process ends (its pipe's end of file), their groups too")
    func watchdogAtTheEnd() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let grandchildFile = folder.appendingPathComponent("grandchild")
        // A watchdog of the test's own, so that its end of file is this test's to give.
        let watchdog = try ChildWatchdog()
        defer { ChildProcesses.terminate(watchdog.watchdog) }
        let shell = Self.shellWithChild(writingPidTo: grandchildFile)
        try ChildProcesses.spawn(shell)
        defer { ChildProcesses.terminate(shell) }
        watchdog.watch(shell.processIdentifier)
        let grandchild = try await Self.pid(in: grandchildFile)
        let ended = try Process.run(URL(fileURLWithPath: "/bin/true"), arguments: [])
        try await waitFor("a child that ends by itself") { !ended.isRunning }
        watchdog.watch(ended.processIdentifier)  // gone already: not registered, nothing to stop

        #expect(Self.isAlive(shell.processIdentifier) && Self.isAlive(grandchild))
        watchdog.close()
        try await waitFor("the watchdog to stop the shell", seconds: 60) { !shell.isRunning }
        #expect(shell.terminationReason == .uncaughtSignal, "the shell exited \(shell.terminationStatus) by itself")
        try await waitFor("the shell's child to go", seconds: 60) { !Self.isAlive(grandchild) }
        try await waitFor("the watchdog to end", seconds: 60) { !watchdog.watchdog.isRunning }
        #expect(watchdog.watchdog.terminationStatus == 0)
    }
}
