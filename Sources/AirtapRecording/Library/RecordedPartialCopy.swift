#if canImport(Glibc)
import Glibc
#endif
import Descriptors

/// A partial track a recorder made: a regular file directly in `STATION/incomplete/` of the
/// folder it records into, every link resolved. Only such a file is removed when a complete
/// copy of the same recording replaces it. The index names files, but a row is not a
/// permission: `library scan` adds the user's own files (a `~/Music/x/incomplete/` folder
/// included), and anyone who can write the index can add a row naming any path.
struct RecordedPartialCopy: Sendable, Hashable {
    /// The recording folder with every link resolved.
    let recordingFolder: String
    /// The station folder's name, and the file's name in its `incomplete/`.
    let stationFolder: String
    let name: String

    /// Nil unless `path`, every link and `..` resolved, is `STATION/incomplete/NAME` inside
    /// `recordingFolder` (itself resolved), compared component by component.
    init?(path: String, recordingFolder: String) {
        guard let folder = Self.realPath(recordingFolder), let file = Self.realPath(path) else { return nil }
        let folderComponents = folder.split(separator: "/")
        let fileComponents = file.split(separator: "/")
        guard fileComponents.count == folderComponents.count + 3,
              fileComponents.starts(with: folderComponents) else { return nil }
        let inside = fileComponents.dropFirst(folderComponents.count)
        guard inside[inside.startIndex + 1] == "incomplete" else { return nil }
        self.recordingFolder = folder
        stationFolder = String(inside[inside.startIndex])
        name = String(inside[inside.startIndex + 2])
    }

    /// Removes the file, walking down from the recording folder by descriptor without following
    /// a link, so a folder swapped for a link since the check cannot redirect the removal.
    /// False when anything on the way is not what the check found.
    func remove() -> Bool {
        var descriptor = DescriptorHeadroom.admit(open(recordingFolder, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        for folder in [stationFolder, "incomplete"] {
            let child = DescriptorHeadroom.admit(openat(descriptor, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
            guard child >= 0 else { return false }
            close(descriptor)
            descriptor = child
        }
        var info = stat()
        guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        return unlinkat(descriptor, name, 0) == 0
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
