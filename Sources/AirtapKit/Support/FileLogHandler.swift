#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import Logging
import Locking

/// `--log FILE`: swift-log lines appended to a file, one per event, with a timestamp, for cron.
public struct FileLogHandler: LogHandler {
    private let file: SharedFile
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]

    /// One open file shared by every logger of the process.
    public final class SharedFile: Sendable {
        // The descriptor is written under the lock (whole lines never interleave) and closed in deinit.
        private let descriptor: Locked<Int32>

        public init(appendingTo path: String) throws(AirtapError) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            // O_APPEND: each line lands at the end even when several airtap runs share the file.
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw .localIO("cannot open log file \(path): \(String(cString: strerror(errno)))")
            }
            self.descriptor = Locked(descriptor)
        }

        deinit {
            descriptor.withLock { _ = close($0) }
        }

        /// Best effort, like FileHandle's write: a log line that cannot be written is dropped.
        func write(_ line: String) {
            let bytes = Array(line.utf8)
            descriptor.withLock { descriptor in
                var offset = 0
                while offset < bytes.count {
                    let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
                    if written < 0 && errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }

    public init(file: SharedFile, level: Logger.Level) {
        self.file = file
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let level = event.level, message = event.message
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let stamp = WallClock.local.internetDateTime(Date())
        self.file.write("\(stamp) \(level) \(fields.isEmpty ? "" : fields + " ")\(message)\n")
    }
}
