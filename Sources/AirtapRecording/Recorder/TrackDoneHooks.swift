#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import DequeModule
import FoundationEssentials
import Locking
import Logging

/// `--on-track-done`: runs the user's command after each complete track, without waiting for it,
/// and without letting a station that changes titles every second start a process per second.
///
/// At most `maxRunning` commands run at once and `maxWaiting` more wait for a slot; a track
/// beyond that is skipped with a warning. One reaper thread watches every running command (a
/// pidfd per child, one `poll`), reaps it and starts the next waiting one; it exists only while
/// commands run. The command gets the file as `$1` (`sh -c COMMAND airtap-on-track-done FILE`):
/// nothing a station sends is pasted into the command text.
package final class TrackDoneHooks: Sendable {
    package static let maxRunning = 4
    package static let maxWaiting = 4

    private let command: String
    private let logger: Logger
    private let state = Locked(State())
    /// Wakes the reaper when a child starts: a pipe, read end in [0], write end in [1].
    private let wake: (read: Int32, write: Int32)

    private struct Job: Sendable {
        let arguments: [String]
        let environment: [String: String]
        let path: String
    }

    private struct Running: Sendable {
        let child: ChildProcess
        /// -1 where pidfd_open is missing (Linux before 5.3): that child is reaped by a blocking wait.
        let pidfd: Int32
    }

    private struct State: Sendable {
        var running: [Running] = []
        /// Slots taken by commands being spawned (counted so two starters cannot both take the last one).
        var starting = 0
        var waiting = Deque<Job>()
        var reaperActive = false
        var peakRunning = 0
        var skipped = 0
    }

    package init(command: String, logger: Logger) {
        self.command = command
        self.logger = logger
        var ends: [Int32] = [-1, -1]
        // pipe2 is not in the Glibc module's view; ChildProcess closes inherited descriptors anyway.
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, O_NONBLOCK)
            }
        } else {
            ends = [-1, -1]
        }
        wake = (ends[0], ends[1])
    }

    deinit {
        for descriptor in [wake.read, wake.write] where descriptor >= 0 { close(descriptor) }
    }

    /// The most commands that ran at once so far, and how many tracks were skipped (for tests and logs).
    package var statistics: (peakRunning: Int, skipped: Int) { state.withLock { ($0.peakRunning, $0.skipped) } }

    /// No command runs, waits or is being started.
    package var isIdle: Bool { state.withLock { $0.running.isEmpty && $0.waiting.isEmpty && $0.starting == 0 } }

    /// At the end of a run: lets the commands still running or waiting finish, for at most
    /// `seconds`, so the last tracks' commands run too (a cron job's last track is its point).
    /// Polls, so no thread of the caller's pool blocks.
    package func finish(waitingAtMost seconds: Double) async {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while !isIdle, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if !isIdle {
            logger.warning("--on-track-done commands still running after \(Int(seconds)) s; airtap exits without them")
        }
    }

    /// Starts the command for `track` now, or queues it, or skips it with a warning.
    func run(for track: RecordedTrack, station: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["AIRTAP_ARTIST"] = track.info?.artist ?? ""
        environment["AIRTAP_TITLE"] = track.info?.title ?? ""
        environment["AIRTAP_STATION"] = station
        // $0 is a fixed name, $1 the path: the command text is the user's alone.
        let job = Job(arguments: ["/bin/sh", "-c", command, "airtap-on-track-done", track.path],
                      environment: environment, path: track.path)
        enum Decision { case start, queued, skip }
        let decision = state.withLock { state -> Decision in
            if state.running.count + state.starting < Self.maxRunning {
                state.starting += 1
                return .start
            }
            if state.waiting.count < Self.maxWaiting {
                state.waiting.append(job)
                return .queued
            }
            state.skipped += 1
            return .skip
        }
        switch decision {
        case .start: start(job)
        case .queued: break
        case .skip:
            logger.warning("--on-track-done skipped for \(track.path): \(Self.maxRunning) commands running, \(Self.maxWaiting) waiting")
        }
    }

    /// Spawns `job` in the slot reserved for it (`state.starting`).
    private func start(_ job: Job) {
        let child: ChildProcess
        do {
            child = try ChildProcess.spawn("/bin/sh", arguments: job.arguments, environment: job.environment, stdin: .null)
        } catch {
            logger.warning("--on-track-done could not start for \(job.path): \(error)")
            // The slot passes to the next waiting command, if any.
            let next = state.withLock { state -> Job? in
                if state.waiting.isEmpty {
                    state.starting -= 1
                    return nil
                }
                return state.waiting.removeFirst()
            }
            if let next { start(next) }
            return
        }
        let pidfd = Self.openPidfd(child.pid)
        let startsReaper = state.withLock { state -> Bool in
            state.starting -= 1
            state.running.append(Running(child: child, pidfd: pidfd))
            state.peakRunning = max(state.peakRunning, state.running.count)
            defer { state.reaperActive = true }
            return !state.reaperActive
        }
        if startsReaper {
            let thread = PosixThread { [self] in reap() }
            thread.name = "airtap.hooks"
            thread.start()
        } else if wake.write >= 0 {
            var byte: UInt8 = 1
            _ = Glibc.write(wake.write, &byte, 1)
        }
    }

    /// The reaper thread: waits for any running command to end, reaps it, starts the next
    /// waiting one; ends when none runs.
    private func reap() {
        while true {
            let running = state.withLock { state -> [Running]? in
                if state.running.isEmpty {
                    state.reaperActive = false
                    return nil
                }
                return state.running
            }
            guard let running else { return }
            for ended in waitForAnyEnd(of: running) {
                _ = ended.child.wait()
                if ended.pidfd >= 0 { close(ended.pidfd) }
                let next = state.withLock { state -> Job? in
                    state.running.removeAll { $0.child.pid == ended.child.pid }
                    guard !state.waiting.isEmpty else { return nil }
                    state.starting += 1
                    return state.waiting.removeFirst()
                }
                if let next { start(next) }
            }
        }
    }

    /// Blocks until at least one of `running` has ended (or a new child started: then none).
    private func waitForAnyEnd(of running: [Running]) -> [Running] {
        guard running.allSatisfy({ $0.pidfd >= 0 }), wake.read >= 0 else {
            // No pidfds: wait for the oldest; the others are reaped in turn.
            return [running[0]]
        }
        var descriptors = running.map { pollfd(fd: $0.pidfd, events: Int16(POLLIN), revents: 0) }
        descriptors.append(pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0))
        let count = poll(&descriptors, nfds_t(descriptors.count), -1)
        guard count > 0 else { return [] }
        var drain = [UInt8](repeating: 0, count: 64)
        while read(wake.read, &drain, drain.count) > 0 {}
        return zip(running, descriptors).filter { $0.1.revents != 0 }.map(\.0)
    }

    /// pidfd_open(2) (glibc 2.36) is looked up: the Glibc module does not show sys/pidfd.h.
    private static func openPidfd(_ pid: pid_t) -> Int32 {
        typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
        guard let symbol = dlsym(nil, "pidfd_open") else { return -1 }
        let descriptor = unsafeBitCast(symbol, to: PidfdOpen.self)(pid, 0)
        if descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return descriptor
    }
}
