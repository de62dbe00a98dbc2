#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Locking

/// `--log FILE`: swift-log lines appended to a file, one per event, with a timestamp, for cron.
public struct FileLogHandler: LogHandler {
    private let file: SharedFile
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]

    /// One open file shared by every logger of the process.
    public final class SharedFile: Sendable {
        private let handle: Locked<FileHandle>

        public init(appendingTo path: String) throws(AirtapError) {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            // O_APPEND: each line lands at the end even when several airtap runs share the file.
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw .localIO("cannot open log file \(path): \(String(cString: strerror(errno)))")
            }
            self.handle = Locked(FileHandle(fileDescriptor: descriptor, closeOnDealloc: true))
        }

        func write(_ line: String) {
            handle.withLock { $0.write(Data(line.utf8)) }
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
