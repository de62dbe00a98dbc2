#if canImport(Glibc)
import Glibc
#endif

/// A small file of airtap's own state (a station's title delay, a directory click), replaced
/// whole: written to a temporary beside it and renamed over it, so a reader or a killed run
/// never sees half a file. Best effort: state is never worth failing a recording for.
package enum StateFile {
    /// Writes `bytes` to `path`, making its folders (mode 0700) first. Never follows a link at
    /// the temporary's name; leaves no temporary behind when the write or the rename fails.
    package static func replace(_ path: String, with bytes: some Collection<UInt8>) {
        makeFolders(String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)]))
        let temporary = path + ".\(getpid()).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { return }
        let contents = Array(bytes)
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        // A rename that fails (a folder where the file goes) must not leave the temporary behind.
        if written != contents.count || rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// Makes `folder` (an absolute path) and every missing folder above it, mode 0700 (state is
    /// the user's own). Best effort: a folder that cannot be made shows when its file is opened.
    package static func makeFolders(_ folder: String) {
        var partial = ""
        for component in folder.split(separator: "/") {
            partial += "/" + component
            _ = mkdir(partial, 0o700)
        }
    }
}
