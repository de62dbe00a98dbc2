import Foundation
import Locking
import Synchronization
import TestStation
import Testing

/// Runs the built `airtap` binary the way a user does and checks output and exit codes.
package enum AirtapBinary {
    package static var directory: URL {
        if let explicit = ProcessInfo.processInfo.environment["AIRTAP_BIN_DIR"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit)
        }
        // The test runner lives beside the products in the build folder.
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    }

    package struct Result {
        package let status: Int32
        package let stdout: String
        package let stderr: String
        /// From the start of the child to its exit, as Foundation's reaper saw it: a test task
        /// that ran late on a loaded machine does not lengthen it.
        package let duration: Duration
        package var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
    }

    /// `environment` is added to (and overrides) the inherited one, after HOME, XDG_CONFIG_HOME and XDG_DATA_HOME.
    /// `limits`: prlimit(1) options (`--fsize=50000`) applied to the airtap process.
    package static func run(_ arguments: [String], in directory: URL? = nil, environment extra: [String: String] = [:],
                    limits: [String] = []) throws -> Result {
        let launch = try Launch(arguments, in: directory, environment: extra, limits: limits)
        launch.process.waitUntilExit()
        return launch.result()
    }

    /// `run`, for async tests (Swift picks this overload where `await` is possible): waits for the
    /// child by polling, so no thread of the cooperative pool (two on this machine) blocks while a
    /// child runs for seconds; a blocked pool stalls every other test in the process into its
    /// timeouts.
    ///
    /// At most `ChildSlots.shared.limit` of these children run at once (the rest wait their turn
    /// before they start; `Result.duration` leaves the wait out), so the servers this process
    /// runs for the tests keep their share of two cores: a few dozen airtaps at once starved them
    /// past the tests' bounds.
    /// `pipedInput`: its bytes reach airtap's stdin through a pipe (`cat FILE | airtap ...`).
    package static func run(_ arguments: [String], in directory: URL? = nil, environment extra: [String: String] = [:],
                    limits: [String] = [], pipedInput: URL? = nil) async throws -> Result {
        await ChildSlots.shared.acquire()
        var launched: Launch?
        do {
            let launch = try Launch(arguments, in: directory, environment: extra, limits: limits, pipedInput: pipedInput)
            launched = launch
            while launch.process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
            await ChildSlots.shared.release()
            return launch.result()
        } catch {
            // Cancelled (a time limit): the child goes with the test.
            if let launched { ChildProcesses.terminate(launched.process) }
            await ChildSlots.shared.release()
            throw error
        }
    }

    /// A child that runs while the test goes on (a test that talks to it): started once a slot is
    /// free, so the test's own deadlines count from the moment it runs, not from its turn in line.
    package final class Started: Sendable {
        private let launch: Launch
        /// The slot goes back once: from `result`, or from `deinit` when a test ended without it.
        private let slotHeld = Mutex(true)

        fileprivate init(_ launch: Launch) { self.launch = launch }

        /// Waits for the exit (polling: no pool thread blocks), then frees the slot.
        package func result() async throws -> Result {
            do {
                while launch.process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
            } catch {
                ChildProcesses.terminate(launch.process)
                await releaseSlot()
                throw error
            }
            await releaseSlot()
            return launch.result()
        }

        /// What the child has written to stderr so far: a test waits for a line of it.
        package var stderrSoFar: String { (try? String(contentsOf: launch.err, encoding: .utf8)) ?? "" }

        package var isRunning: Bool { launch.process.isRunning }

        /// SIGTERM, as kill(1) or a service manager's stop sends; `result()` then waits for the exit.
        package func terminate() {
            if launch.process.isRunning { launch.process.terminate() }
        }

        private func releaseSlot() async {
            if slotHeld.withLock({ held in defer { held = false }; return held }) { await ChildSlots.shared.release() }
        }

        /// However the test ends, the child goes and its slot is freed.
        deinit {
            if launch.process.isRunning { ChildProcesses.terminate(launch.process) }
            if slotHeld.withLock({ $0 }) { Task { await ChildSlots.shared.release() } }
        }
    }

    /// `run`, split in two: this returns once the child runs; `Started.result()` waits for its
    /// end. Call `result()` on every path (it frees the slot).
    package static func launch(_ arguments: [String], in directory: URL? = nil, environment extra: [String: String] = [:]) async throws -> Started {
        await ChildSlots.shared.acquire()
        do {
            return Started(try Launch(arguments, in: directory, environment: extra, limits: []))
        } catch {
            await ChildSlots.shared.release()
            throw error
        }
    }

    /// A counting semaphore for the children `run` starts: waiting suspends, never blocks a thread.
    ///
    /// A free slot goes to the waiting test that asked first for any slot, not to whoever queued
    /// first: a test that starts several children one after another would otherwise go to the
    /// back of the line for each, and on a slow machine (TSan) its children's waits add up past
    /// its time limit while tests that began after it finish.
    package actor ChildSlots {
        /// Three per core: a child mostly waits on its station's real time; with one per core and
        /// one more, a TSan run's last minutes leave a core idle while children queue here.
        package static let shared = ChildSlots(limit: 3 * ProcessInfo.processInfo.activeProcessorCount)
        package let limit: Int
        private var running = 0
        private var waiting: [(rank: Int, continuation: CheckedContinuation<Void, Never>)] = []
        /// Each test's rank: the order of its first request.
        private var ranks: [Test.ID: Int] = [:]
        private var nextRank = 0

        package init(limit: Int) { self.limit = limit }

        package func acquire() async {
            let rank = rank(of: Test.current?.id)
            if running < limit {
                running += 1
                return
            }
            await withCheckedContinuation { waiting.append((rank, $0)) }
        }

        /// Hands the slot straight to the earliest-ranked waiter, if any.
        package func release() {
            guard let next = waiting.indices.min(by: { waiting[$0].rank < waiting[$1].rank }) else {
                running -= 1
                return
            }
            waiting.remove(at: next).continuation.resume()
        }

        /// A test's rank, given at its first request; a request from outside a test ranks alone.
        private func rank(of test: Test.ID?) -> Int {
            if let test, let rank = ranks[test] { return rank }
            let rank = nextRank
            nextRank += 1
            if let test { ranks[test] = rank }
            return rank
        }
    }

    /// A started airtap whose stdout and stderr go to files in a scratch folder (its HOME too).
    fileprivate struct Launch: Sendable {
        package let process = Process()
        package let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-cli-\(UUID().uuidString)")
        package var out: URL { scratch.appendingPathComponent("out") }
        package var err: URL { scratch.appendingPathComponent("err") }
        private(set) var started = ContinuousClock.now
        /// Stamped by Foundation's termination handler, on its own queue, when the child is reaped.
        private let exited = Locked<ContinuousClock.Instant?>(nil)

        package init(_ arguments: [String], in directory: URL?, environment extra: [String: String], limits: [String],
             pipedInput: URL? = nil) throws {
            let binary = AirtapBinary.directory.appendingPathComponent("airtap")
            if let pipedInput {
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                process.arguments = ["-c", "cat -- \"$0\" | \"$@\"", pipedInput.path, binary.path] + arguments
            } else if limits.isEmpty {
                process.executableURL = binary
                process.arguments = arguments
            } else {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
                process.arguments = limits + ["--", binary.path] + arguments
            }
            process.currentDirectoryURL = directory ?? FileManager.default.temporaryDirectory
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            _ = FileManager.default.createFile(atPath: err.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = try FileHandle(forWritingTo: err)
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CONFIG_HOME"] = scratch.path
            environment["HOME"] = scratch.path
            // The library index too: a test's recordings never join another's (or the user's).
            environment["XDG_DATA_HOME"] = scratch.path
            // And what it learns of a station's title delay.
            environment["XDG_STATE_HOME"] = scratch.path
            environment.merge(extra) { $1 }
            process.environment = environment
            let exited = exited
            process.terminationHandler = { _ in exited.withLock { $0 = .now } }
            started = .now
            try ChildProcesses.run(process)
        }

        /// What it printed and how it ended; the scratch folder goes.
        package func result() -> Result {
            defer { try? FileManager.default.removeItem(at: scratch) }
            return Result(status: process.terminationStatus,
                          stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
                          stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "",
                          duration: (exited.withLock { $0 } ?? .now) - started)
        }
    }

    /// Starts the binary and returns at once; its output goes nowhere. The caller stops it on
    /// every way out (`defer { ChildProcesses.terminate(process) }`).
    package static func start(_ arguments: [String], in directory: URL? = nil) throws -> Process {
        let process = Process()
        process.executableURL = Self.directory.appendingPathComponent("airtap")
        process.arguments = arguments
        process.currentDirectoryURL = directory ?? FileManager.default.temporaryDirectory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.run(process)
        return process
    }

    package static func temporaryFolder(with stationsJSON: String? = nil) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let stationsJSON {
            try stationsJSON.write(to: folder.appendingPathComponent("stations.json"), atomically: true, encoding: .utf8)
        }
        return folder
    }
}

extension Trait where Self == TimeLimitTrait {
    /// The bound on a test whose children wait for `AirtapBinary.ChildSlots`: a guard against a
    /// hang, not a measure. Swift Testing counts the test's turns in that line too, and under
    /// ThreadSanitizer on two loaded cores the line alone has reached 10 minutes for the tests
    /// that start late, so the bound is twice that: longer than the whole TSan suite takes.
    package static var waitingForChildren: Self { .timeLimit(.minutes(20)) }
}
