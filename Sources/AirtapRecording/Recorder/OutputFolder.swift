#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import Descriptors
import FoundationEssentials
import ICYWire
import RecordingRules

/// A folder airtap writes into, held open by descriptor: every file and folder below it is made
/// with `openat`/`mkdirat`/`linkat` relative to it, one level at a time, and a symbolic link
/// found inside `--out` is refused, never followed. Someone who can write the output folder can
/// plant links (`incomplete -> /etc`, `NAME.mp3.part.tag -> ~/.bashrc`); they stay inert.
///
/// The root (`--out`, or the folder of `--single FILE`) is opened like any path: the user chose
/// it, and it may be a link.
///
/// A folder held for long (the one a track grows in) may `release` its descriptor: a fleet of
/// stations then holds one descriptor a recording fewer. The next use reopens it the same way,
/// one level at a time, and takes it only if it is the same folder (device and inode): a folder
/// moved away or swapped for another while the track grew is never written into by name.
final class OutputFolder {
    let path: String
    /// How to find the folder again: the root, opened like any path, and the names below it.
    private let root: String
    private let components: [String]
    private let identity: (device: UInt64, inode: UInt64)
    private var held: Int32

    private init(descriptor: Int32, path: String, root: String, components: [String]) {
        var status = stat()
        if fstat(descriptor, &status) != 0 { status = stat() }
        self.held = descriptor
        self.path = path
        self.root = root
        self.components = components
        identity = (UInt64(status.st_dev), UInt64(status.st_ino))
    }

    deinit {
        if held >= 0 { close(held) }
    }

    /// The folder's descriptor, reopened after `release`. -1 with `errno` set when it cannot be
    /// (ESTALE: another folder stands at its name now); every call made with it then fails.
    var descriptor: Int32 {
        if held < 0 { held = reopen() }
        return held
    }

    /// The descriptor, or an error that says why the folder cannot be reached.
    func reachable() throws(AirtapError) -> Int32 {
        let descriptor = descriptor
        guard descriptor >= 0 else {
            if errno == ESTALE { throw .localIO("\(path) was moved or replaced while airtap wrote into it") }
            throw .localIO("cannot open folder \(path): \(errorText(errno))")
        }
        return descriptor
    }

    /// Closes the descriptor until the next use needs it.
    func release() {
        if held >= 0 { close(held) }
        held = -1
    }

    private func reopen() -> Int32 {
        var descriptor = DescriptorHeadroom.admit(Glibc.open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        for name in components where descriptor >= 0 {
            let child = DescriptorHeadroom.admit(openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
            let code = errno
            close(descriptor)
            errno = code
            descriptor = child
        }
        guard descriptor >= 0 else { return -1 }
        var status = stat()
        guard fstat(descriptor, &status) == 0, UInt64(status.st_dev) == identity.device, UInt64(status.st_ino) == identity.inode else {
            close(descriptor)
            errno = ESTALE
            return -1
        }
        return descriptor
    }

    /// The user's folder `path`, created (with its parents) when missing; links are followed.
    static func root(_ path: String) throws(AirtapError) -> OutputFolder {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .localIO("cannot create folder \(path): \(describeSystemError(error))")
        }
        let descriptor = DescriptorHeadroom.admit(Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        guard descriptor >= 0 else { throw .localIO("cannot open folder \(path): \(errorText(errno))") }
        return OutputFolder(descriptor: descriptor, path: path, root: path, components: [])
    }

    /// `root/components...`, each level created when missing and none of them a link.
    static func open(_ components: some Sequence<String>, below root: String) throws(AirtapError) -> OutputFolder {
        var folder = try Self.root(root)
        for name in components { folder = try folder.child(name) }
        return folder
    }

    /// The folder `name` in this one, created when missing. A link or a file there is an error.
    func child(_ name: String) throws(AirtapError) -> OutputFolder {
        let childPath = path + "/" + name
        let descriptor = try reachable()
        if mkdirat(descriptor, name, 0o755) != 0, errno != EEXIST {
            throw .localIO("cannot create folder \(childPath): \(errorText(errno))")
        }
        let child = DescriptorHeadroom.admit(openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
        guard child >= 0 else {
            let code = errno
            if code == ELOOP || code == ENOTDIR {
                throw .localIO("\(childPath) is a symbolic link or not a folder; airtap does not follow links inside its output folder")
            }
            throw .localIO("cannot open folder \(childPath): \(errorText(code))")
        }
        return OutputFolder(descriptor: child, path: childPath, root: root, components: components + [name])
    }

    /// Creates `name` here for writing: never an existing file, never through a link.
    /// Nil when the name is taken (by anything, a link included); any other failure throws.
    func createFile(_ name: String, mode: mode_t = 0o644) throws(AirtapError) -> Int32? {
        let descriptor = try reachable()
        let created = openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        let file = DescriptorHeadroom.admit(created)
        if created >= 0, file < 0 {
            unlinkat(descriptor, name, 0)  // ours, just made, empty: no trace of a file we cannot keep open
            errno = EMFILE
        }
        guard file >= 0 else {
            if errno == EEXIST { return nil }
            throw .localIO("cannot create \(path)/\(name): \(errorText(errno))")
        }
        return file
    }

    /// Makes `name` durable here: its folder entry survives a power cut once this returns.
    func sync() {
        _ = fsync(descriptor)
    }
}

/// Moves `name` in `source` to `preferred` in `target`, or to `name (2).ext`, `name (3).ext`... if
/// taken: never overwrites (linkat fails on EEXIST, a planted link included), however many
/// writers share the folder. Only EEXIST moves on to the next name; any other error throws.
func moveWithoutOverwriting(_ name: String, in source: OutputFolder, to preferred: String,
                            in target: OutputFolder) throws(AirtapError) -> String {
    let dot = preferred.lastIndex(of: ".").flatMap { $0 == preferred.startIndex ? nil : $0 }
    let base = dot.map { String(preferred[..<$0]) } ?? preferred
    let ext = dot.map { String(preferred[preferred.index(after: $0)...]) } ?? ""
    let sourcePath = source.path + "/" + name
    // Reached once, before the first attempt: a folder moved or replaced says so, not EBADF.
    _ = try source.reachable()
    _ = try target.reachable()
    for attempt in 1...10_000 {
        // " (n)" still within the 200-byte cap of a name made from a title.
        let candidate = SafeFileName.numbered(base, attempt, maxBytes: max(200, base.utf8.count)) + (ext.isEmpty ? "" : ".\(ext)")
        if linkat(source.descriptor, name, target.descriptor, candidate, 0) == 0 {
            unlinkat(source.descriptor, name, 0)
            target.sync()
            return target.path + "/" + candidate
        }
        switch errno {
        case EEXIST:
            continue
        case EPERM, EOPNOTSUPP, ENOSYS, EMLINK:
            // No hard links here (vfat, exFAT, some network and FUSE file systems): check, then
            // rename. The station's lock keeps other airtaps out of this folder.
            if faccessat(target.descriptor, candidate, F_OK, AT_SYMLINK_NOFOLLOW) == 0 { continue }
            if renameat(source.descriptor, name, target.descriptor, candidate) == 0 {
                target.sync()
                return target.path + "/" + candidate
            }
        default:
            break
        }
        throw .localIO("cannot move \(sourcePath) to \(target.path)/\(candidate): \(errorText(errno))")
    }
    throw .localIO("too many files named \(base) in \(target.path)")
}

/// The same for full paths outside `--out` (`--single FILE`): both folders are the user's.
func moveWithoutOverwriting(_ source: String, to preferred: String) throws(AirtapError) -> String {
    let from = URL(fileURLWithPath: source)
    let to = URL(fileURLWithPath: preferred)
    return try moveWithoutOverwriting(
        from.lastPathComponent, in: OutputFolder.root(from.deletingLastPathComponent().path),
        to: to.lastPathComponent, in: OutputFolder.root(to.deletingLastPathComponent().path))
}
