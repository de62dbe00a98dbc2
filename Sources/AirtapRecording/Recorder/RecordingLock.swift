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
import Locking
import RecordingRules

/// One recording per station and output folder: a one-byte write lock in `<out>/.airtap.lock`,
/// held for as long as this object lives, at an offset named by the station's folder and id.
/// `<folder>/.airtap-<id>.lock` beside it names the process that holds it, for the error message
/// another recording prints and for the leftovers' check of who else records into the folder.
///
/// A kernel lock rather than "create the file, delete it when done": the kernel drops it when
/// the process ends however it ends (SIGKILL, a crash, a power cut on a local disk), so a lock is
/// never stale and nobody has to judge whether a pid in a file is still alive. Every station's
/// lock is a range of one open file (an open file description lock, `F_OFD_SETLK`, which two
/// opens conflict on just as two processes do), not a `flock` on a file of its own: a fleet
/// holds one descriptor for all its locks instead of one per station.
package final class RecordingLock: Sendable {
    private let table: RecordingLockTable
    private let offset: Int64
    package let path: String

    fileprivate init(table: RecordingLockTable, offset: Int64, path: String) {
        self.table = table
        self.offset = offset
        self.path = path
    }

    deinit {
        table.release(offset)
    }

    /// A lock of its own (one open of the output folder's lock file) for the station `stationID`
    /// recording into `folder`: see `RecordingLockTable.acquire`.
    package static func acquire(folder: String, below root: String, stationID: String, wait: Bool) throws(AirtapError) -> RecordingLock {
        try RecordingLockTable.open(root: root).acquire(folder: folder, stationID: stationID, wait: wait)
    }

    /// `.airtap-<id>.lock`, the id made safe like a file name (ids come from stations.json or a
    /// URL, `Station.id(forURL:)`).
    static func fileName(stationID: String) -> String {
        ".airtap-\(SafeFileName.component(stationID, maxBytes: 200) ?? "station").lock"
    }

    /// Where in the lock file the station whose lock file is `name` in `folder` (relative to the
    /// output folder, "" for the output folder itself) holds its byte: 62 bits of FNV-1a over
    /// both, the same in every process. Two stations would have to agree in all 62 bits to
    /// be taken for one.
    static func offset(folder: String, lockName name: String) -> Int64 {
        Int64(bitPattern: StableHash.fnv1a(folder.isEmpty ? name : folder + "/" + name) & 0x3FFF_FFFF_FFFF_FFFF)
    }

    /// Whether any recording, this process's included, holds the lock of `name` in `folder`
    /// below `root`. A probe through an open of its own: a lock is told by the open that does not
    /// hold it.
    package static func isHeld(folder: String, lockName name: String, below root: String) -> Bool {
        let descriptor = DescriptorHeadroom.admit(Glibc.open(root + "/" + RecordingLockTable.fileName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC))
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var range = RecordingLockTable.range(at: offset(folder: folder, lockName: name), type: F_WRLCK)
        return fcntl(descriptor, RecordingLockTable.getLock, &range) == 0 && range.l_type != Int16(F_UNLCK)
    }
}

/// The locks of one output folder this process holds through one open of its lock file. Two
/// stations of one table never hold the same byte (the kernel would not tell them apart): the
/// table keeps which bytes it holds and refuses a second holder at once, waiting or not.
package final class RecordingLockTable: Sendable {
    // Sendable: the descriptor is set once and only closed in deinit, when no lock holds the
    // table any more; the bytes held are behind their own lock.
    private let descriptor: Int32
    private let root: String
    private let held = Locked<Set<Int64>>([])

    static let fileName = ".airtap.lock"
    /// Open file description locks (Linux 3.15+); glibc declares them only under _GNU_SOURCE,
    /// which Swift's Glibc module is built without.
    static let getLock: Int32 = 36
    static let setLock: Int32 = 37
    static let setLockWaiting: Int32 = 38

    private init(descriptor: Int32, root: String) {
        self.descriptor = descriptor
        self.root = root
    }

    deinit {
        close(descriptor)
    }

    /// Opens `root`'s lock file (creating both).
    package static func open(root: String) throws(AirtapError) -> RecordingLockTable {
        let descriptor = try openLockFile(fileName, in: OutputFolder.root(root))
        return RecordingLockTable(descriptor: descriptor, root: root)
    }

    /// Opens (creating) the lock or pid file `name` in `folder` for reading and writing.
    /// O_NOFOLLOW: a link planted at its name must not get its target locked, created or
    /// truncated. O_CLOEXEC: an --on-track-done command must not inherit the descriptor, or the
    /// locks would outlive airtap for as long as that command runs.
    private static func openLockFile(_ name: String, in folder: OutputFolder) throws(AirtapError) -> Int32 {
        let descriptor = DescriptorHeadroom.admit(openat(folder.descriptor, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644))
        guard descriptor >= 0 else {
            let code = errno
            let path = folder.path + "/" + name
            if code == ELOOP {
                throw .localIO("lock file \(path) is a symbolic link; remove it (airtap does not follow links inside its output folder)")
            }
            throw .localIO("cannot open lock file \(path): \(errorText(code))")
        }
        return descriptor
    }

    /// Locks the station `stationID` recording into `folder` (relative to the root, "" for the
    /// root itself; created), or throws `.alreadyRunning` at once when another recording holds
    /// it; with `wait`, blocks the calling thread until that recording ends (a holder in this
    /// table is refused at once: it would wait for itself).
    package func acquire(folder: String, stationID: String, wait: Bool) throws(AirtapError) -> RecordingLock {
        // The station's folder is inside the root: opened without following a link planted there.
        let stationFolder = try OutputFolder.open(folder.split(separator: "/").map(String.init), below: root)
        let name = RecordingLock.fileName(stationID: stationID)
        let path = stationFolder.path + "/" + name
        let pidFile = try Self.openLockFile(name, in: stationFolder)
        defer { close(pidFile) }

        let offset = RecordingLock.offset(folder: folder, lockName: name)
        let folderText = stationFolder.path
        let busy = { (pid: Int32?) -> AirtapError in
            .alreadyRunning("station '\(stationID)' is already being recorded into \(folderText)\(pid.map { " (pid \($0))" } ?? ""); use --wait to wait for it")
        }
        guard held.withLock({ $0.insert(offset).inserted }) else { throw busy(getpid()) }
        var range = Self.range(at: offset, type: F_WRLCK)
        var result: Int32
        repeat {
            result = fcntl(descriptor, wait ? Self.setLockWaiting : Self.setLock, &range)
        } while result != 0 && errno == EINTR
        guard result == 0 else {
            let code = errno
            held.withLock { _ = $0.remove(offset) }
            guard code == EAGAIN || code == EACCES else { throw .localIO("cannot lock \(path): \(errorText(code))") }
            throw busy(Self.readPID(pidFile))
        }
        Self.writePID(pidFile)
        return RecordingLock(table: self, offset: offset, path: path)
    }

    fileprivate func release(_ offset: Int64) {
        var range = Self.range(at: offset, type: F_UNLCK)
        _ = fcntl(descriptor, Self.setLock, &range)
        held.withLock { _ = $0.remove(offset) }
    }

    static func range(at offset: Int64, type: Int32) -> Glibc.flock {
        var range = Glibc.flock()
        range.l_type = Int16(type)
        range.l_whence = Int16(SEEK_SET)
        range.l_start = __off_t(offset)
        range.l_len = 1
        range.l_pid = 0  // must be 0 for open file description locks
        return range
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
