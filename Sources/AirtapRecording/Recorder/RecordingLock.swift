#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import AirtapSupport
import Descriptors
import FoundationEssentials
import ICYWire
import RecordingRules

/// One recording per station and output folder: an exclusive `flock` on
/// `<folder>/.airtap-<id>.lock`, held for as long as this object lives.
///
/// flock rather than "create the file, delete it when done": the kernel drops the lock when the
/// process ends however it ends (SIGKILL, a crash, a power cut on a local disk), so a lock is
/// never stale and nobody has to judge whether a pid in a file is still alive. The pid written
/// into the file is only for the error message.
package final class RecordingLock: Sendable {
    // Sendable without a lock of its own: the descriptor is set once and only closed in deinit,
    // when nothing else can hold a reference.
    private let descriptor: Int32
    package let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        // Closing the last descriptor of the open file description releases the flock. The file
        // stays: removing it would let a waiting process lock the removed inode while a newcomer
        // creates and locks a fresh file, and both would record.
        close(descriptor)
    }

    /// Locks the station's folder (creating it), or throws `.alreadyRunning` at once when another
    /// recording holds it; with `wait`, blocks the calling thread until that recording ends.
    package static func acquire(folder: String, stationID: String, wait: Bool) throws(AirtapError) -> RecordingLock {
        // The station's folder is inside --out: opened without following a link planted there.
        let url = URL(fileURLWithPath: folder)
        let stationFolder = try OutputFolder.root(url.deletingLastPathComponent().path).child(url.lastPathComponent)
        let name = fileName(stationID: stationID)
        let path = stationFolder.path + "/" + name
        // O_NOFOLLOW: a link planted at the lock's name must not get its target truncated.
        // O_CLOEXEC: an --on-track-done command must not inherit the descriptor, or the lock
        // would outlive airtap for as long as that command runs.
        let descriptor = DescriptorHeadroom.admit(openat(stationFolder.descriptor, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644))
        guard descriptor >= 0 else {
            let code = errno
            if code == ELOOP {
                throw .localIO("lock file \(path) is a symbolic link; remove it (airtap does not follow links inside its output folder)")
            }
            throw .localIO("cannot open lock file \(path): \(errorText(code))")
        }

        var result: Int32
        repeat {
            result = flock(descriptor, LOCK_EX | (wait ? 0 : LOCK_NB))
        } while result != 0 && errno == EINTR
        guard result == 0 else {
            let code = errno
            let holder = readPID(descriptor)
            close(descriptor)
            guard code == EWOULDBLOCK else { throw .localIO("cannot lock \(path): \(errorText(code))") }
            let pid = holder.map { " (pid \($0))" } ?? ""
            throw .alreadyRunning(
                "station '\(stationID)' is already being recorded into \(folder)\(pid); use --wait to wait for it")
        }
        writePID(descriptor)
        return RecordingLock(descriptor: descriptor, path: path)
    }

    /// `.airtap-<id>.lock`, the id made safe like a file name (ids come from stations.json or a
    /// URL, `Station.id(forURL:)`).
    static func fileName(stationID: String) -> String {
        ".airtap-\(SafeFileName.component(stationID, maxBytes: 200) ?? "station").lock"
    }

    private static func writePID(_ descriptor: Int32) {
        // Best effort: the pid only improves the message another process prints.
        let text = Array("\(getpid())\n".utf8)
        guard ftruncate(descriptor, 0) == 0 else { return }
        _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    }

    private static func readPID(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer.prefix(count), as: UTF8.self)
        return Int32(text.trimmingSpacesAndNewlines())
    }
}
