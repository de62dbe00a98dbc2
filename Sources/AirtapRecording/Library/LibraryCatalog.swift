#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import FoundationEssentials
import ICYWire

/// What `airtap library` does: list, search, scan and prune the index, and how its entries
/// are shown. The command only maps options to these and the outcome to an exit code.
package enum LibraryCatalog {
    /// The index at `path` (`--library`), else the default one.
    /// `library scan`'s line for a file it left out: names from the disk made inert.
    package static func skippedLine(_ skipped: (path: String, reason: String)) -> String {
        "airtap: skipped \(InertText.render(skipped.path)): \(InertText.render(skipped.reason))"
    }

    /// `library prune`'s line for an entry whose file is gone.
    package static func droppedLine(_ entry: LibraryEntry) -> String {
        "dropped \(InertText.render(entry.path))"
    }

    /// `--library FILE` as the command line gave it (relative to the working folder), or the default.
    package static func open(commandLinePath: String?) throws(AirtapError) -> LibraryIndex {
        try open(path: commandLinePath.map { URL(fileURLWithPath: $0).standardizedFileURL.path },
                 environment: ProcessInfo.processInfo.environment)
    }

    /// `--library FILE` for a command that only reads (list, search, prune): nil when there is
    /// no index there yet, which is then left uncreated (no folders, no empty database).
    package static func openExisting(commandLinePath: String?) throws(AirtapError) -> (index: LibraryIndex?, path: String) {
        let environment = ProcessInfo.processInfo.environment
        let chosen = try choose(path: commandLinePath.map { URL(fileURLWithPath: $0).standardizedFileURL.path }, environment: environment)
        guard FileManager.default.fileExists(atPath: chosen) else { return (nil, chosen) }
        return (try open(path: chosen, environment: environment), chosen)
    }

    /// What a reading subcommand says when `openExisting` found no index.
    package static func missingIndexLine(_ path: String) -> String {
        "airtap: no library index at \(InertText.render(path)) yet (nothing recorded or scanned into it)"
    }

    private static func choose(path: String?, environment: [String: String]) throws(AirtapError) -> String {
        guard let chosen = path ?? LibraryIndex.defaultPath(environment: environment) else {
            throw .configuration("no library: set --library FILE, XDG_DATA_HOME or HOME")
        }
        return chosen
    }

    package static func open(path: String?, environment: [String: String]) throws(AirtapError) -> LibraryIndex {
        let chosen = try choose(path: path, environment: environment)
        do {
            return try LibraryIndex(path: chosen)
        } catch {
            throw error.airtapError
        }
    }

    /// The entries as aligned columns: STARTED (UTC), LENGTH, STATION, TRACK, FILE. Every
    /// cell is inert: titles come from stations and from other people's files.
    package static func table(_ entries: [LibraryEntry]) -> [String] {
        let header = ["STARTED (UTC)", "LENGTH", "STATION", "TRACK", "FILE"]
        let rows = [header] + entries.map { entry in
            [String(LibraryEntry.utcStamp(entry.startedAt).dropLast()).replacingEvery("T", with: " "),
             length(entry.seconds) + (entry.isComplete ? "" : "*"),
             entry.stationName ?? entry.stationID ?? "", entry.displayTitle, entry.path]
                .map { InertText.render($0, maxUTF8Bytes: 400) }
        }
        let widths = (0..<header.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                line += column == row.count - 1 ? cell : cell.padded(toLength: widths[column]) + "  "
            }
            return line
        }
    }

    /// One JSON object per entry, one per line.
    package static func jsonLines(_ entries: [LibraryEntry]) -> [String] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return entries.compactMap { entry in
            (try? encoder.encode(entry)).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// "3:07", "1:02:03".
    package static func length(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        let (hours, minutes, rest) = (total / 3600, total / 60 % 60, total % 60)
        return hours > 0 ? "\(hours):\(minutes.zeroPadded(width: 2)):\(rest.zeroPadded(width: 2))" : "\(minutes):\(rest.zeroPadded(width: 2))"
    }

    /// The file kinds a scan reads; anything else in the folder is left alone.
    static let audioExtensions: Set<String> = ["mp3", "mp2", "mp1", "aac", "ogg", "oga", "opus"]

    /// What a scan did.
    package struct ScanReport: Sendable {
        package var added: [LibraryEntry] = []
        /// Files that held no audio this airtap can read, with why.
        package var skipped: [(path: String, reason: String)] = []
    }

    /// `library scan DIR` as the command line gave it (relative to the working folder).
    package static func scan(commandLinePath folder: String, into index: LibraryIndex) throws(AirtapError) -> ScanReport {
        try scan(URL(fileURLWithPath: folder).standardizedFileURL.path, into: index)
    }

    /// Indexes every audio file below `folder` (links are not followed) from its own tags and
    /// audio: title and artist from its ID3 tag or Vorbis comments, the station from its album
    /// (what airtap writes there), length, fingerprint and loudness from its frames. A file already in
    /// the index is indexed again. Nothing on disk changes.
    package static func scan(_ folder: String, into index: LibraryIndex, progress: (String) -> Void = { _ in }) throws(AirtapError) -> ScanReport {
        let found = try audioFiles(below: folder)
        do {
            try index.addFolder(folder)
        } catch {
            throw error.airtapError
        }
        var report = ScanReport(skipped: found.unnamed)
        for path in found.files {
            let summary: AudioFileSummary
            do {
                summary = try AudioFileFingerprint.read(path: path, wholeFile: true)
            } catch {
                report.skipped.append((path, "\(error)"))
                continue
            }
            guard let codec = summary.codec, summary.seconds > 0 else {
                report.skipped.append((path, "no audio frames"))
                continue
            }
            var info = stat()
            let modified = lstat(path, &info) == 0 ? Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec)) : Date()
            var entry = LibraryEntry(
                path: path, stationName: summary.album, title: summary.title, artist: summary.artist,
                startedAt: modified.addingTimeInterval(-summary.seconds), seconds: summary.seconds, codec: codec.rawValue,
                bitrate: summary.bitrate, isComplete: !path.contains("/incomplete/"),
                fingerprint: summary.fingerprint.values.isEmpty ? nil : summary.fingerprint)
            if let replayGain = summary.replayGain {
                (entry.loudness, entry.gain, entry.peak) = (replayGain.integratedLoudness, replayGain.trackGain, replayGain.samplePeak)
            }
            do {
                _ = try index.add(entry, dedupe: false)
            } catch {
                throw error.airtapError
            }
            progress(path)
            report.added.append(entry)
        }
        return report
    }

    /// Regular files with an audio extension below `folder`, sorted; symbolic links are skipped.
    /// `unnamed`: the files and folders whose names are not UTF-8 (the index keeps paths as
    /// text, so they cannot be in it), each with its name escaped and why it is left out.
    static func audioFiles(below folder: String) throws(AirtapError) -> (files: [String], unnamed: [(path: String, reason: String)]) {
        var found: [String] = []
        var unnamed: [(path: String, reason: String)] = []
        var pending = [folder]
        while let directory = pending.popLast() {
            guard let stream = opendir(directory) else {
                if directory == folder { throw .localIO("cannot read \(folder): \(errorText(errno))") }
                continue
            }
            defer { closedir(stream) }
            while let item = readdir(stream) {
                let bytes = withUnsafeBytes(of: item.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
                guard bytes != [0x2E], bytes != [0x2E, 0x2E] else { continue }
                let prefix = directory == "/" ? "/" : directory + "/"
                var info = stat()
                guard lstat(Array(prefix.utf8) + bytes + [0], &info) == 0 else { continue }
                let type = info.st_mode & S_IFMT
                guard let name = String(validating: bytes, as: UTF8.self) else {
                    let what = type == S_IFDIR ? "a folder whose name is not UTF-8: not scanned" : "its name is not UTF-8"
                    if type == S_IFDIR || type == S_IFREG { unnamed.append((prefix + escapedName(bytes), what)) }
                    continue
                }
                switch type {
                case S_IFDIR:
                    pending.append(prefix + name)
                case S_IFREG:
                    let ext = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
                    if name.contains("."), audioExtensions.contains(ext) { found.append(prefix + name) }
                default:
                    break
                }
            }
        }
        return (found.sorted(), unnamed.sorted { $0.path < $1.path })
    }

    /// A name's bytes as text: valid UTF-8 as it is, each byte of an invalid sequence as `\xHH`.
    static func escapedName(_ bytes: [UInt8]) -> String {
        var text = ""
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                text.unicodeScalars.append(Unicode.UTF8.decode(encoded))
                offset += encoded.count
            case .error(let length):
                for byte in bytes[offset..<offset + length] { text += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true) }
                offset += length
            case .emptyInput:
                return text
            }
        }
    }
}
