import FoundationEssentials
import Glibc

/// `airtap add`: a new station appended to stations.json as text, so the user's formatting,
/// key order and other entries stay byte for byte as they were (re-serialising would not).
package enum StationsFileEdit {
    /// The new entry as one line of JSON: `{ "id": "x", "name": "y", "url": "http://..." }`.
    package static func entryText(id: String, name: String?, urls: [String]) -> String {
        var fields = ["\"id\": \(JSONValue.quoted(id))"]
        if let name { fields.append("\"name\": \(JSONValue.quoted(name))") }
        if urls.count == 1 {
            fields.append("\"url\": \(JSONValue.quoted(urls[0]))")
        } else {
            fields.append("\"urls\": [\(urls.map(JSONValue.quoted).joined(separator: ", "))]")
        }
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
    /// before it replaces the file, so a bad edit never costs the user their list.
    package static func add(id: String, name: String?, urls: [String], toFileAt path: String) throws(AirtapError) {
        guard !id.isEmpty, !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .usage("a station id must be non-empty text without control characters")
        }
        let entry = StationsFileEdit.entryText(id: id, name: name, urls: urls)
        let edited: [UInt8]
        if let existing = FileManager.default.contents(atPath: path) {
            let catalog = try parse(existing, source: path)
            if catalog.stations.contains(where: { $0.id == id }) {
                throw .configuration("station '\(id)' is already in \(path)")
            }
            guard let appended = StationsFileEdit.appending(entry: entry, to: Array(existing)) else {
                throw .configuration("\(path): no \"stations\" list to add to")
            }
            edited = appended
        } else if FileManager.default.fileExists(atPath: path) {
            throw .localIO("cannot read stations file \(path)")
        } else {
            edited = StationsFileEdit.newFile(entry: entry)
        }
        let check = try parse(Data(edited), source: path)
        guard check.stations.contains(where: { $0.id == id }) else {
            throw .configuration("\(path): the new station did not land in the \"stations\" list")
        }
        try replaceContents(of: path, with: edited)
    }

    /// Written beside the file and renamed over it (through a symlink to its target), keeping
    /// the file's permissions: an interrupted write never leaves half a list.
    private static func replaceContents(of path: String, with bytes: [UInt8]) throws(AirtapError) {
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath()
        let folder = target.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw .localIO("cannot create \(folder.path)")
        }
        let permissions = (try? FileManager.default.attributesOfItem(atPath: target.path))?[.posixPermissions]
        let temporary = folder.appendingPathComponent(".\(target.lastPathComponent).airtap-add-\(getpid())")
        do {
            try Data(bytes).write(to: temporary)
            if let permissions { try FileManager.default.setAttributes([.posixPermissions: permissions], ofItemAtPath: temporary.path) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw .localIO("cannot write \(temporary.path)")
        }
        guard rename(temporary.path, target.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw .localIO("cannot replace \(target.path): \(String(cString: strerror(errno)))")
        }
    }
}
