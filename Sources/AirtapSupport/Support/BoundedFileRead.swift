#if canImport(Glibc)
import Glibc
#endif
import Descriptors
import FoundationEssentials

/// Reads a whole file that a user or a stranger chose (stations.json, a playlist), never more
/// than a limit: the size is checked on the opened descriptor before anything is allocated, and
/// at most `limit + 1` bytes are ever read, so a 2 GB sparse file or `/dev/zero` costs nothing.
/// A pipe (`--stations <(...)`) works too: it is read up to the limit.
package enum BoundedFileRead {
    package enum Failure: Error, Equatable {
        /// No file at that path.
        case missing
        /// Larger than the limit (by its size, or by what it gave before the limit was passed).
        case tooLarge
        /// Anything else: a folder, no permission, an I/O error (`strerror`'s text).
        case unreadable(String)

        /// Why, as a few words for an error line.
        package var reason: String {
            switch self {
            case .missing: "no such file"
            case .tooLarge: "too large"
            case .unreadable(let reason): reason
            }
        }
    }

    /// `regularFileOnly`: a pipe, a FIFO or a device is refused (`unreadable`), not read.
    package static func contents(of path: String, limit: Int, regularFileOnly: Bool = false) throws(Failure) -> Data {
        let descriptor = try openForReading(path, regularFileOnly: regularFileOnly)
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unreadable(errorText(errno)) }
        let type = status.st_mode & S_IFMT
        if type == S_IFREG, status.st_size > off_t(limit) { throw .tooLarge }
        // One byte past the limit tells a file of exactly `limit` bytes from a longer one.
        let capacity = (type == S_IFREG ? min(Int(status.st_size), limit) : min(limit, 64 * 1024)) + 1
        var bytes = [UInt8](repeating: 0, count: capacity)
        var count = 0
        while true {
            if count == bytes.count {
                guard bytes.count <= limit else { throw .tooLarge }
                bytes.append(contentsOf: repeatElement(0, count: min(bytes.count, limit + 1 - bytes.count)))
            }
            let read = bytes.withUnsafeMutableBytes { buffer in
                Glibc.read(descriptor, buffer.baseAddress! + count, buffer.count - count)
            }
            if read == 0 { break }
            guard read > 0 else {
                if errno == EINTR { continue }
                throw .unreadable(errorText(errno))
            }
            count += read
            if count > limit { throw .tooLarge }
        }
        return Data(bytes[..<count])
    }

    /// `path` open for reading, without ever waiting in `open`: a FIFO nobody writes to would
    /// hold a plain `open` forever, deaf to SIGINT and SIGTERM. It is opened with `O_NONBLOCK`,
    /// its type checked on the descriptor (a folder never; anything but a regular file only
    /// without `regularFileOnly`), then `O_NONBLOCK` is cleared so reads wait for a pipe's
    /// writer as usual. `followsLinks: false`: a symbolic link at `path` is refused.
    package static func openForReading(_ path: String, regularFileOnly: Bool, followsLinks: Bool = true) throws(Failure) -> Int32 {
        var descriptor: Int32
        let flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (followsLinks ? 0 : O_NOFOLLOW)
        repeat {
            descriptor = DescriptorHeadroom.admit(open(path, flags))
        } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT { throw .missing }
            throw .unreadable(code == ELOOP && !followsLinks ? "a symbolic link" : errorText(code))
        }
        var status = stat()
        let type = fstat(descriptor, &status) == 0 ? status.st_mode & S_IFMT : 0
        let refusal: String? = switch type {
        case 0: errorText(errno)
        case S_IFDIR: errorText(EISDIR)
        case S_IFREG: nil
        default: regularFileOnly ? "not a regular file" : nil
        }
        if refusal == nil, fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK) == 0 {
            return descriptor
        }
        let reason = refusal ?? errorText(errno)
        close(descriptor)
        throw .unreadable(reason)
    }

    /// `limit` as people read it: "256 KiB", "16 MiB".
    package static func describe(_ limit: Int) -> String {
        limit >= 1 << 20 && limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit >> 10) KiB"
    }
}
