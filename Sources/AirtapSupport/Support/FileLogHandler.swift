#if canImport(Glibc)
import Glibc
#endif
import Descriptors
import Dispatch
import FoundationEssentials
import Locking
import Logging
import SystemPackage

/// airtap's one log format, on stderr and in `--log FILE` alike: one logfmt line per event,
///
///     time=2026-11-23T21:08:36+01:00 level=info station=demo position=16000 msg="title: A - B"
///
/// `time` (RFC 3339, local), `level`, the metadata sorted by key, then `msg`. A value is written
/// bare when it is a plain word, else in double quotes with `"` and `\` escaped, so the line
/// parses as logfmt. Control characters never reach here raw: `InertLogHandler` wraps this one.
package struct FileLogHandler: LogHandler {
    private let file: SharedFile
    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]

    /// Where lines go: a file opened for appending, or standard error. One per process, shared
    /// by every logger; whole lines are written under its lock, so they never interleave.
    package final class SharedFile: Sendable {
        /// The descriptor, and the path it was opened from (nil: standard error, never closed).
        private let state: Locked<(descriptor: Int32, path: String?)>
        /// SIGUSR1 reopens the file (after logrotate moved it away); kept alive with the file.
        private let reopenSignal: Locked<(any DispatchSourceSignal)?>

        /// Standard error: what every command logs to without `--log`.
        package static func standardError() -> SharedFile {
            SharedFile(descriptor: STDERR_FILENO, path: nil)
        }

        private init(descriptor: Int32, path: String?) {
            state = Locked((descriptor, path))
            reopenSignal = Locked(nil)
        }

        /// `--log FILE`: appended to (several airtap runs may share it), reopened on SIGUSR1.
        package convenience init(appendingTo path: String) throws(AirtapError) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let descriptor = try Self.open(path)
            self.init(descriptor: descriptor, path: path)
            // logrotate: rename the file, then `kill -USR1`; new lines go to a new file at the
            // path, nothing is lost and nothing stops (SIGHUP stops a recording, as a closed
            // terminal must).
            signal(SIGUSR1, SIG_IGN)
            // Made inside the lock: the source then never exists outside the value it guards.
            reopenSignal.withLock { slot in
                let source = DispatchSource.makeSignalSource(signal: SIGUSR1, queue: DispatchQueue(label: "airtap.log.reopen"))
                source.setEventHandler { [weak self] in self?.reopen() }
                source.resume()
                slot = source
            }
        }

        private static func open(_ path: String) throws(AirtapError) -> Int32 {
            // O_APPEND: each line lands at the end even when several airtap runs share the file.
            let descriptor = DescriptorHeadroom.admit(Glibc.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644))
            guard descriptor >= 0 else {
                throw .localIO("cannot open log file \(path): \(errorText(errno))")
            }
            return descriptor
        }

        deinit {
            reopenSignal.withLock { $0?.cancel() }
            state.withLock { state in
                if state.path != nil { _ = close(state.descriptor) }
            }
        }

        /// Opens the path again and writes there from now on; when it cannot, keeps the old file.
        package func reopen() {
            state.withLock { state in
                guard let path = state.path, let fresh = try? Self.open(path) else { return }
                _ = close(state.descriptor)
                state.descriptor = fresh
            }
        }

        /// Best effort, like FileHandle's write: a log line that cannot be written is dropped.
        func write(_ line: String) {
            let bytes = Array(line.utf8)
            state.withLock { state in
                _ = try? FileDescriptor(rawValue: state.descriptor).writeAll(bytes)
            }
        }
    }

    package init(file: SharedFile, level: Logger.Level) {
        self.file = file
        self.logLevel = level
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        file.write(Self.line(time: WallClock.local.internetDateTime(Date()), level: event.level, metadata: merged,
                             message: event.message.description))
    }

    /// One logfmt line, newline included.
    package static func line(time: String, level: Logger.Level, metadata: Logger.Metadata, message: String) -> String {
        var line = "time=\(time) level=\(level)"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " \(key)=\(logfmtValue(value.description))"
        }
        line += " msg=\(logfmtValue(message))\n"
        return line
    }

    /// A bare word when it can be one, else quoted with `"` and `\` escaped.
    package static func logfmtValue(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains { scalar in
            scalar == " " || scalar == "\"" || scalar == "=" || scalar == "\\" || scalar.value < 0x21 || scalar.value == 0x7F
        }
        guard needsQuotes else { return value }
        var quoted = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}
