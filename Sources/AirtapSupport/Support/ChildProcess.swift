#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// Starts programs with posix_spawn (Foundation's `Process` is not in FoundationEssentials).
///
/// The child gets exactly `arguments` as argv (argv[0] included: nothing is quoted or split,
/// no shell unless one is what runs), exactly `environment`, stdin/stdout/stderr as asked, no
/// other descriptor of ours (closed from 3 up), no blocked signals and every signal at its
/// default disposition (airtap ignores SIGXFSZ and traps SIGINT/SIGTERM; a child must not inherit
/// that). Every child is reaped with `wait()`: by its caller, or for the
/// `--on-track-done` commands nobody waits for, by `TrackDoneHooks`' one reaper thread.
package struct ChildProcess: Sendable {
    package let pid: pid_t

    /// Where one of the child's standard descriptors comes from or goes to.
    package enum Stream: Sendable {
        /// Ours (the same terminal, pipe or file).
        case inherited
        /// /dev/null.
        case null
        /// A file opened for reading (stdin) or created/truncated for writing (stdout, stderr).
        case file(String)
    }

    /// How a child ended: `status` is its exit status, or the signal number that killed it
    /// (as Foundation's `terminationStatus`).
    package struct Termination: Sendable, Hashable {
        package let status: Int32
        package let wasSignaled: Bool
    }

    package struct SpawnError: Error, Sendable, CustomStringConvertible {
        package let executable: String
        package let code: Int32
        package var description: String { errorText(code) }
    }

    /// Starts `executable` (a path; not looked up in PATH).
    package static func spawn(_ executable: String, arguments: [String], environment: [String: String],
                             stdin: Stream = .inherited, stdout: Stream = .inherited,
                             stderr: Stream = .inherited) throws(SpawnError) -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (descriptor, stream) in [(STDIN_FILENO, stdin), (STDOUT_FILENO, stdout), (STDERR_FILENO, stderr)] {
            let flags = descriptor == STDIN_FILENO ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
            switch stream {
            case .inherited: break
            case .null: posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", flags, 0o644)
            case .file(let path): posix_spawn_file_actions_addopen(&actions, descriptor, path, flags, 0o644)
            }
        }
        closeFrom(3, in: &actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid = pid_t()
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard status == 0 else { throw SpawnError(executable: executable, code: status) }
        return ChildProcess(pid: pid)
    }

    /// Blocks until the child ends, and reaps it.
    package func wait() -> Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            // Only EINTR is worth a retry; ECHILD means it is gone already (reaped elsewhere).
            guard errno == EINTR else { return Termination(status: -1, wasSignaled: false) }
        }
        // WIFEXITED/WEXITSTATUS/WTERMSIG are macros Swift cannot import.
        let signal = status & 0x7f
        if signal == 0 { return Termination(status: (status >> 8) & 0xff, wasSignaled: false) }
        return Termination(status: signal, wasSignaled: true)
    }

    /// posix_spawn_file_actions_addclosefrom_np (glibc 2.34) is not in the Glibc module's view
    /// of spawn.h, so it is looked up; without it, each open descriptor is closed by number.
    private static func closeFrom(_ lowest: Int32, in actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            if closeFrom(&actions, lowest) == 0 { return }
        }
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for case let descriptor? in entries.map({ Int32($0) }) where descriptor >= lowest {
            // Only descriptors without FD_CLOEXEC: closing one that is gone by then fails the spawn.
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0, flags & FD_CLOEXEC == 0 {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }
    }
}
