import AirtapSupport
import Descriptors
import FoundationEssentials
import Glibc

/// `airtap add`: a new station appended to stations.json as text, so the user's formatting,
/// key order and other entries stay byte for byte as they were (re-serialising would not).
enum StationsFileEdit {
    /// The new entry as one line of JSON: `{ "id": "x", "name": "y", "url": "http://..." }`.
    /// `extra`: further string keys, in order (`genre`, `homepage`, `directoryUuid`).
    package static func entryText(id: String, name: String?, urls: [String], extra: [(key: String, value: String)] = []) -> String {
        var fields = ["\"id\": \(JSONValue.quoted(id))"]
        if let name { fields.append("\"name\": \(JSONValue.quoted(name))") }
        if urls.count == 1 {
            fields.append("\"url\": \(JSONValue.quoted(urls[0]))")
        } else {
            fields.append("\"urls\": [\(urls.map(JSONValue.quoted).joined(separator: ", "))]")
        }
        fields += extra.map { "\(JSONValue.quoted($0.key)): \(JSONValue.quoted($0.value))" }
        return "{ " + fields.joined(separator: ", ") + " }"
    }

    /// The contents of a new stations file holding one entry.
    package static func newFile(entry: String) -> [UInt8] {
        Array("{\n  \"stations\": [\n    \(entry)\n  ]\n}\n".utf8)
    }

    /// `file` with `entry` inserted after the last element of its "stations" array (on a line of
    /// its own, indented like that element, when the elements are one per line); nil when the
    /// file has no such array.
    package static func appending(entry: String, to file: [UInt8]) -> [UInt8]? {
        guard let array = JSONSyntax.stationsArray(in: file) else { return nil }
        let entryBytes = Array(entry.utf8)
        guard let last = array.elements.last else {
            // An empty list: the entry on its own line, the `]` on the next, at the key's indent.
            let indent = indentation(ofLineContaining: array.open, in: file)
            let inserted = Array("\n".utf8) + indent + Array("  ".utf8) + entryBytes + Array("\n".utf8) + indent
            return Array(file[..<(array.open + 1)]) + inserted + Array(file[array.close...])
        }
        let onLinesOfTheirOwn = file[array.open..<last.lowerBound].contains(UInt8(ascii: "\n"))
        let separator = onLinesOfTheirOwn
            ? Array(",\n".utf8) + indentation(ofLineContaining: last.lowerBound, in: file)
            : Array(", ".utf8)
        return Array(file[..<last.upperBound]) + separator + entryBytes + Array(file[last.upperBound...])
    }

    /// The spaces and tabs that start the line holding `offset`.
    private static func indentation(ofLineContaining offset: Int, in bytes: [UInt8]) -> [UInt8] {
        var start = offset
        while start > 0, bytes[start - 1] != UInt8(ascii: "\n") { start -= 1 }
        var end = start
        while end < offset, bytes[end] == UInt8(ascii: " ") || bytes[end] == UInt8(ascii: "\t") { end += 1 }
        return Array(bytes[start..<end])
    }
}

extension StationCatalog {
    /// Where `airtap add` writes: the file the others read (`--stations`, else the first that
    /// exists on the search path), or, when there is none, the per-user one
    /// (`$XDG_CONFIG_HOME/airtap/stations.json`, else `~/.config/airtap/stations.json`).
    package static func fileForAdding(explicitPath: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let explicitPath { return explicitPath }
        let paths = searchPaths(environment: environment)
        if let existing = paths.first(where: { FileManager.default.fileExists(atPath: $0) }) { return existing }
        return paths.count > 1 ? paths[1] : paths[0]
    }

    /// Appends a station to the stations file at `path` (creating it and its folder when there
    /// is none), refusing an id that is already there. The edited text is checked by loading it
    /// before it replaces the file, so a bad edit never costs the user their list. Concurrent
    /// adds take turns: each holds a lock beside the file from its read to its rename, so none
    /// replaces the file with a copy that lacks another's station.
    package static func add(id: String, name: String?, urls: [String], extra: [(key: String, value: String)] = [],
                            toFileAt path: String) throws(AirtapError) {
        if let problem = Station.problem(withID: id) { throw .usage(problem) }
        let entry = StationsFileEdit.entryText(id: id, name: name, urls: urls, extra: extra)
        // Edited through a symlink: the file it points to is the one replaced.
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath()
        let folder = target.deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .localIO("cannot create \(folder)")
        }
        let lock = try StationsFileLock(beside: target.path)
        defer { withExtendedLifetime(lock) {} }
        let existing: Data?
        do {
            existing = try BoundedFileRead.contents(of: path, limit: maxFileBytes)
        } catch {
            switch error {
            case .missing: existing = nil
            case .tooLarge: throw .configuration("stations file \(path) is larger than \(BoundedFileRead.describe(maxFileBytes))")
            case .unreadable(let reason): throw .localIO("cannot read stations file \(path): \(reason)")
            }
        }
        let edited: [UInt8]
        if let existing {
            let catalog = try parse(existing, source: path)
            if catalog.stations.contains(where: { $0.id == id }) {
                throw .configuration("station '\(id)' is already in \(path)")
            }
            guard let appended = StationsFileEdit.appending(entry: entry, to: Array(existing)) else {
                throw .configuration("\(path): no \"stations\" list to add to")
            }
            edited = appended
        } else {
            edited = StationsFileEdit.newFile(entry: entry)
        }
        let check = try parse(Data(edited), source: path)
        guard check.stations.contains(where: { $0.id == id }) else {
            throw .configuration("\(path): the new station did not land in the \"stations\" list")
        }
        try replaceContents(of: target.path, with: edited)
    }

    /// Written to a new file beside the target and renamed over it, keeping the target's
    /// permissions: an interrupted write never leaves half a list. The new file's name has 64
    /// random bits and it is created with O_EXCL|O_NOFOLLOW, so a link planted at a name another
    /// user could predict is never written through; it is fsynced before the rename, and the
    /// folder after.
    private static func replaceContents(of target: String, with bytes: [UInt8]) throws(AirtapError) {
        let url = URL(fileURLWithPath: target)
        let folder = url.deletingLastPathComponent().path
        var existing = stat()
        let permissions = stat(target, &existing) == 0 ? existing.st_mode & 0o7777 : nil
        var temporary = ""
        var descriptor: Int32 = -1
        for _ in 0..<16 {
            let random = String(UInt64.random(in: .min ... .max), radix: 16)
            temporary = folder + "/.\(url.lastPathComponent).airtap-add-\(random)"
            descriptor = DescriptorHeadroom.admit(open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644))
            if descriptor >= 0 || errno != EEXIST { break }
        }
        guard descriptor >= 0 else { throw .localIO("cannot create \(temporary): \(errorText(errno))") }
        func discard(_ message: String) -> AirtapError {
            close(descriptor)
            unlink(temporary)
            return .localIO(message)
        }
        if let permissions, fchmod(descriptor, permissions) != 0 { throw discard("cannot set the permissions of \(temporary): \(errorText(errno))") }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw discard("cannot write \(temporary): \(errorText(errno))") }
            written += count
        }
        guard fsync(descriptor) == 0 else { throw discard("cannot write \(temporary): \(errorText(errno))") }
        close(descriptor)
        guard rename(temporary, target) == 0 else {
            let code = errno
            unlink(temporary)
            throw .localIO("cannot replace \(target): \(errorText(code))")
        }
        let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            _ = fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }
}

/// An exclusive `flock` on `.NAME.lock` beside a stations file, held while this object lives
/// (the kernel drops it however the process ends). The lock file stays: removing it would let
/// two processes lock two different files. A link planted at its name is refused, not followed.
private final class StationsFileLock {
    private let descriptor: Int32

    init(beside file: String) throws(AirtapError) {
        let url = URL(fileURLWithPath: file)
        let path = url.deletingLastPathComponent().path + "/.\(url.lastPathComponent).lock"
        let descriptor = DescriptorHeadroom.admit(open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644))
        guard descriptor >= 0 else {
            if errno == ELOOP {
                throw .localIO("lock file \(path) is a symbolic link; remove it (airtap does not follow it)")
            }
            throw .localIO("cannot open lock file \(path): \(errorText(errno))")
        }
        var result: Int32
        repeat { result = flock(descriptor, LOCK_EX) } while result != 0 && errno == EINTR
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw .localIO("cannot lock \(path): \(errorText(code))")
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}

extension StationCatalog {
    /// The URLs of a station `add` is given: an http(s) stream URL, or a local .pls/.m3u file's
    /// streams.
    package static func streamURLs(from source: String) throws(AirtapError) -> [String] {
        if source.contains("://") {
            guard isStreamURL(source) else { throw .usage("'\(source)' is not an http or https URL") }
            return [source]
        }
        guard FileManager.default.fileExists(atPath: source) else {
            throw .usage("'\(source)' is neither an http(s) URL nor a playlist file")
        }
        return try stationFromPlaylistFile(source).urls
    }
}
