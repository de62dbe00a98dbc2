import AirtapKit
import AirtapRecording
import FoundationEssentials
import Glibc

/// The library `serve` shows at `/recordings`: its index, and the folders whose files it may send.
package struct ServedLibrary: Sendable, Hashable {
    /// The library index file.
    package var indexPath: String
    /// Only files below these folders and those the index lists (recorded into, scanned) are
    /// sent, whatever else a row names: an index is writable by every airtap of the user and by
    /// `library scan`, so a row is not a permission.
    package var folders: [String]

    package init(indexPath: String, folders: [String]) {
        self.indexPath = indexPath
        self.folders = folders
    }
}

/// The served library's index and folders, for the directory. Loop-confined, like it: a query
/// is one indexed SQLite read (WAL: never waits for a recorder's write), short enough for the loop.
final class RecordingShelf {
    /// The newest this many entries are on the page (and of a search's matches): the page stays
    /// quick to build and to render in a library of any size.
    static let pageLimit = 200

    private let index: LibraryIndex
    /// The folders given (`--out`); the index's own list of folders recorded into and scanned is
    /// read at each request, so a scan while the server runs shows at once.
    private let givenFolders: [String]

    init(_ library: ServedLibrary) throws(LibraryError) {
        index = try LibraryIndex(path: library.indexPath)
        givenFolders = library.folders
    }

    /// The folders files may be sent from, with symbolic links resolved, each ending in `/`.
    private func folders() -> [String] {
        let listed = (try? index.folders()) ?? []
        return (givenFolders + listed).compactMap { Self.realPath($0).map { $0.hasSuffix("/") ? $0 : $0 + "/" } }
    }

    /// Rows read at most for one page: entries the page may not play (a scanned file elsewhere,
    /// a row naming any path) are passed over, but never more than this many.
    static let maxRowsRead = 10 * pageLimit

    /// The newest entries the page may play (`servedPath`), or the newest of those whose title,
    /// artist or station contains `query`: an entry whose file would be a 404 is not shown.
    func entries(matching query: String?) throws(LibraryError) -> [LibraryEntry] {
        let folders = folders()
        var shown: [LibraryEntry] = []
        var offset = 0
        while shown.count < Self.pageLimit, offset < Self.maxRowsRead {
            let batch = if let query, !query.isEmpty {
                try index.search(query, limit: Self.pageLimit, offset: offset)
            } else {
                try index.list(limit: Self.pageLimit, offset: offset)
            }
            shown += batch.filter { servedPath(of: $0, folders: folders) != nil }.prefix(Self.pageLimit - shown.count)
            guard batch.count == Self.pageLimit else { break }
            offset += batch.count
        }
        return shown
    }

    /// The entry's file with every link resolved, when it is inside one of the folders; nil otherwise.
    func servedPath(of entry: LibraryEntry, folders: [String]) -> String? {
        guard let real = Self.realPath(entry.path), folders.contains(where: { real.hasPrefix($0) }) else { return nil }
        return real
    }

    /// The file of entry `id`, open for reading; nil unless the entry exists and its file (every
    /// link resolved) is a regular file inside one of the folders.
    func open(id: Int64) -> OpenRecording? {
        guard let entry = try? index.entry(id: id), let real = servedPath(of: entry, folders: folders()) else { return nil }
        // O_NOFOLLOW: a link put in place of the resolved file since `realpath` is not followed.
        let descriptor = Glibc.open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            return nil
        }
        return OpenRecording(descriptor: descriptor, size: Int(info.st_size), contentType: Self.contentType(entry))
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// By the codec the index recorded, else by the file's extension.
    static func contentType(_ entry: LibraryEntry) -> String {
        switch entry.codec?.lowercased() {
        case "mp3", "mp2", "mp1": return "audio/mpeg"
        case "aac": return "audio/aac"
        case "vorbis": return "audio/ogg"
        case "opus": return "audio/opus"
        default:
            switch entry.path.split(separator: ".").last?.lowercased() {
            case "aac": return "audio/aac"
            case "ogg", "oga": return "audio/ogg"
            case "opus": return "audio/opus"
            default: return "audio/mpeg"
            }
        }
    }
}

/// A recording's file, open: the connection that sends it owns the descriptor and closes it.
struct OpenRecording {
    let descriptor: Int32
    let size: Int
    let contentType: String
}

/// What a request's `Range` header asks of a file of `size` bytes. One range only: a client
/// asking for several gets the whole file, as RFC 9110 allows.
enum ByteRangeRequest: Equatable {
    case whole
    /// Bytes `range` of the file (never empty).
    case partial(Range<Int>)
    case unsatisfiable

    init(header: String?, size: Int) {
        guard let header = header?.trimmedSpaces, header.lowercased().hasPrefix("bytes="),
              !header.contains(",") else {
            self = .whole
            return
        }
        let spec = header.dropFirst("bytes=".count).trimmedSpaces
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            self = .whole
            return
        }
        let first = parts[0].trimmedSpaces, last = parts[1].trimmedSpaces
        let isDigits = { (text: String) in !text.isEmpty && text.utf8.count <= 18 && text.utf8.allSatisfy { (0x30...0x39).contains($0) } }
        switch (first.isEmpty, last.isEmpty) {
        case (true, false):
            // The last `n` bytes.
            guard isDigits(last), let count = Int(last) else { self = .whole; return }
            self = count == 0 || size == 0 ? .unsatisfiable : .partial(max(0, size - count)..<size)
        case (false, _):
            guard isDigits(first), let start = Int(first), last.isEmpty || isDigits(last) else { self = .whole; return }
            let end = last.isEmpty ? size - 1 : min(Int(last) ?? 0, size - 1)
            if !last.isEmpty, let stated = Int(last), stated < start {
                self = .whole
            } else if start >= size {
                self = .unsatisfiable
            } else {
                self = .partial(start..<(end + 1))
            }
        case (true, true):
            self = .whole
        }
    }
}

extension StringProtocol {
    /// Without the spaces and tabs around it.
    var trimmedSpaces: String {
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        return String(drop(while: isSpace).reversed().drop(while: isSpace).reversed())
    }
}
