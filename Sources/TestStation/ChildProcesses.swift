#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The child processes a test starts (airtap, icecast2, ffmpeg, ezstream, a browser), stopped
/// however the test ends.
///
/// Foundation starts every child in a process group of its own, so neither Ctrl-C nor the end of
/// the test process reaches it: a child left running by a failed test lives on for hours. Two
/// nets catch it:
/// - each test stops its children on every way out (`terminate` in a `defer`, or an owner whose
///   deinit does it), the group with them (an `--on-track-done` command, a shell's children);
/// - `run` tells a watchdog about every child; when the test process ends, however it ends
///   (an exit with a test's child still running, a crash, a timeout's kill), the watchdog stops
///   those still running.
package enum ChildProcesses {
    /// Starts `process` and registers it with the watchdog.
    package static func run(_ process: Process) throws {
        try spawn(process)
        ChildWatchdog.shared?.watch(process.processIdentifier)
    }

    /// Foundation's `Process.run` on Linux makes a socket pair without close-on-exec, and learns
    /// that its child ended when the child's end closes. It spares from the new child only the
    /// descriptors open when it listed them: a pair another thread's `run` made in the meantime
    /// went into this child too, and that other child's end was then noticed only when this one
    /// ended (two tests each waited for a child whose end the other's long-lived child held).
    /// One `run` at a time, and `Pipe`s made between them (`pipe()`), closes that window.
    private static let spawning = NSLock()

    /// `process.run()`, never beside another in this process. Without the watchdog: for the
    /// watchdog itself, and for children that end before their caller returns.
    package static func spawn(_ process: Process) throws {
        try spawning.withLock { try process.run() }
    }

    /// A `Pipe` for a child's standard input or output, made while no child is being started: its
    /// descriptors are not close-on-exec either.
    package static func pipe() -> Pipe {
        spawning.withLock { Pipe() }
    }

    /// Whether `process` ended within `timeout` of the test process's time (`Patience`). Polls,
    /// so no thread of the cooperative pool blocks on a child.
    package static func waitForExit(_ process: Process, timeout: Duration) async -> Bool {
        var patience = Patience(timeout)
        while process.isRunning {
            if patience.isSpent() { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    /// SIGTERM to the child's process group, SIGKILL after `grace` seconds if the child still
    /// runs; reaps it. Does nothing for a child that ended or never started, so it is safe in a
    /// `defer` after the test stopped the child itself. Blocks for at most `grace` seconds.
    package static func terminate(_ process: Process, grace: Double = 5) {
        let pid = process.processIdentifier
        guard pid > 0, process.isRunning else { return }
        signalGroup(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { signalGroup(pid, SIGKILL) }
        process.waitUntilExit()
        // Whatever the child started in its group goes too. The group only: the pid itself is
        // free again now.
        kill(-pid, SIGKILL)
    }

    /// User plus system CPU time of process `pid` so far, in clock ticks (Linux /proc, fields 14
    /// and 15); 0 when it cannot be read.
    package static func cpuTicks(of pid: pid_t) -> Int {
        // The state is field 3, so utime (14) and stime (15) are at 11 and 12.
        guard let fields = statFields(of: pid), fields.count > 12,
              let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }

    /// The fields of /proc/PID/stat after the command name in parentheses (which may hold
    /// spaces): the first is the state (field 3); nil when the process is gone.
    package static func statFields(of pid: pid_t) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let end = stat.range(of: ") ", options: .backwards) else { return nil }
        return stat[end.upperBound...].split(separator: " ")
    }

    /// The group of a child Foundation started is its pid; a child that made a group of its
    /// own in the meantime still gets the signal itself.
    private static func signalGroup(_ pid: pid_t, _ signal: Int32) {
        if kill(-pid, signal) != 0 { kill(pid, signal) }
    }
}

/// A `/bin/sh` that reads `pid starttime` lines from a socket only the test process writes to,
/// and at its end of file (the test process ended, however) stops the children still running:
/// SIGTERM to each one's group, SIGKILL three seconds later. A pid counts only while its start
/// time (/proc/PID/stat, field 22) is the registered one, so a pid the system gave to another
/// process since is left alone.
final class ChildWatchdog: Sendable {
    /// The test process's watchdog, started with the first child; nil if it cannot start.
    package static let shared: ChildWatchdog? = try? ChildWatchdog()

    /// The write end, close-on-exec: only this process holds it, so that the end of this
    /// process is the watchdog's end of file. Each line goes in one `send` (a few bytes: lines
    /// from several threads do not interleave); closed in `close()`.
    private let writeEnd: Int32
    package let watchdog: Process

    static let script = """
        trap '' INT HUP TERM PIPE
        children=''
        while read -r pid start; do children="$children $pid:$start"; done
        alive() { [ "$(sed 's/^.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f20)" = "$2" ]; }
        stop() {
          stopped=''
          for child in $children; do
            pid=${child%%:*}; start=${child#*:}
            if alive "$pid" "$start"; then kill -s "$1" -- "-$pid" 2>/dev/null || kill -s "$1" "$pid" 2>/dev/null; stopped=yes; fi
          done
          [ -n "$stopped" ]
        }
        if stop TERM; then sleep 3; stop KILL; fi
        exit 0
        """

    package init() throws {
        // A socket pair rather than a pipe: it is made close-on-exec atomically (a child another
        // thread starts meanwhile must not inherit the write end, or the end of file would wait
        // for that child).
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        let readEnd = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        writeEnd = ends[1]
        watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        watchdog.arguments = ["-c", Self.script]
        watchdog.standardInput = readEnd
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        do {
            try ChildProcesses.spawn(watchdog)
        } catch {
            Glibc.close(writeEnd)
            throw error
        }
        try readEnd.close()
    }

    /// Registers a started child.
    package func watch(_ pid: pid_t) {
        guard pid > 0, let start = Self.startTime(of: pid) else { return }
        let line = Array("\(pid) \(start)\n".utf8)
        _ = line.withUnsafeBytes { send(writeEnd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// End of file for the watchdog, as if this process had ended: it stops the children still
    /// running. For testing the watchdog itself; the shared one closes with the process.
    package func close() {
        Glibc.close(writeEnd)
    }

    /// Field 22 of /proc/PID/stat: the 20th after the command name.
    static func startTime(of pid: pid_t) -> String? {
        guard let fields = ChildProcesses.statFields(of: pid), fields.count > 19 else { return nil }
        return String(fields[19])
    }
}
