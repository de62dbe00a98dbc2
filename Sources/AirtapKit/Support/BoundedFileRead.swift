import CurlSource
#if canImport(Glibc)
import Glibc
#endif
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
    }

    package static func contents(of path: String, limit: Int) throws(Failure) -> Data {
        var descriptor: Int32
        repeat {
            descriptor = DescriptorHeadroom.admit(open(path, O_RDONLY | O_CLOEXEC))
        } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else {
            throw errno == ENOENT ? .missing : .unreadable(errorText(errno))
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unreadable(errorText(errno)) }
        let type = status.st_mode & S_IFMT
        if type == S_IFDIR { throw .unreadable(errorText(EISDIR)) }
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

    /// `limit` as people read it: "256 KiB", "16 MiB".
    package static func describe(_ limit: Int) -> String {
        limit >= 1 << 20 && limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit >> 10) KiB"
    }
}
