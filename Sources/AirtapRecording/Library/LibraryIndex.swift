#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import AudioFingerprinting
import FoundationEssentials
import SQLiteStore

/// Why the library index could not do what was asked.
package struct LibraryError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Kind: Sendable, Hashable {
        /// The disk is full: nothing was written, and nothing already there was lost.
        case full
        /// Another process held the index locked for longer than the busy timeout.
        case busy
        /// The file is not an index of a schema this airtap knows (another program's, a newer airtap's, damaged).
        case unusable
        case other
    }

    package let kind: Kind
    package let description: String

    init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    init(_ error: SQLiteError, path: String) {
        let kind: Kind = error.isFull ? .full : error.isBusy ? .busy : error.isCorrupt ? .unusable : .other
        self.init(kind, "library \(path): \(error.message)")
    }

    package var airtapError: AirtapError {
        kind == .unusable ? .configuration(description) : .localIO(description)
    }
}

/// The library index: one SQLite file (WAL, so readers never wait for a writer) shared by every
/// airtap process of one user. Each write is its own transaction, committed before the call
/// returns: a SIGKILL loses at most the track being added, never one added before.
///
/// Owns a connection: used from one thread at a time (`TrackLibrary` puts it behind a lock).
package final class LibraryIndex {
    package let path: String
    private let connection: SQLiteConnection

    /// Schema versions, in order: `PRAGMA user_version` says how many have been applied. A
    /// migration is appended, never edited, once released.
    static let migrations: [String] = [
        """
        CREATE TABLE tracks (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            station_id TEXT,
            station_name TEXT,
            title TEXT,
            artist TEXT,
            started_at TEXT NOT NULL,
            seconds REAL NOT NULL,
            codec TEXT,
            bitrate INTEGER,
            complete INTEGER NOT NULL,
            fingerprint BLOB,
            loudness REAL,
            gain REAL,
            peak REAL,
            search_text TEXT NOT NULL,
            added_at TEXT NOT NULL
        );
        CREATE INDEX tracks_started_at ON tracks(started_at);
        CREATE TABLE fingerprint_terms (
            term INTEGER NOT NULL,
            track_id INTEGER NOT NULL REFERENCES tracks(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            PRIMARY KEY (term, track_id)
        ) WITHOUT ROWID;
        CREATE INDEX fingerprint_terms_track ON fingerprint_terms(track_id);
        """,
        // The folders recorded into and scanned: what `serve`'s page may send files from.
        "CREATE TABLE folders (path TEXT PRIMARY KEY, added_at TEXT NOT NULL) WITHOUT ROWID;",
    ]

    /// Folders read at most: a row is one folder a recording or a scan used.
    static let maxFolders = 1000

    /// Rows read per term in a lookup: a term shared by thousands of tracks (silence, a
    /// held tone) says little, and must not make one lookup read the whole table.
    static let maxRowsPerTerm = 200
    /// Tracks compared bit by bit per lookup.
    static let maxCandidates = 8

    /// Opens the index at `path`, creating it (and its folder) when missing, and brings its
    /// schema up to date.
    package init(path: String) throws(LibraryError) {
        self.path = path
        let folder = String(path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/"))
        if !folder.isEmpty { StateFile.makeFolders(folder) }
        do {
            connection = try SQLiteConnection(path: path)
            // Functions in a schema (a planted CHECK, default or view) run only if SQLite built them in.
            try connection.execute("PRAGMA trusted_schema=OFF")
            // Before anything writes: another program's database, or an index with a planted
            // trigger, is refused untouched (WAL mode alone would rewrite its header).
            try LibrarySchema.check(connection, migrations: Self.migrations)
            // WAL: several recorders write and `library list` reads at once; NORMAL sync is
            // durable against a killed process (the OS has the WAL), and costs no fsync per track.
            try connection.enableWriteAheadLog()
            try connection.execute("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON")
        } catch {
            throw LibraryError(error, path: path)
        }
        try migrate()
    }

    /// The index's path when none is given: `$XDG_DATA_HOME/airtap/library.sqlite`, else
    /// `~/.local/share/airtap/library.sqlite`; nil without either variable.
    package static func defaultPath(environment: [String: String]) -> String? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return data + "/airtap/library.sqlite"
        }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/share/airtap/library.sqlite"
    }

    private var schemaVersion: Int {
        get throws(SQLiteError) {
            var version = 0
            try connection.run("PRAGMA user_version") { version = Int($0.integer(0)) }
            return version
        }
    }

    private func migrate() throws(LibraryError) {
        do {
            // Read first, outside a write lock: an index already up to date is never locked to open it.
            guard try schemaVersion != Self.migrations.count else { return }
            try connection.immediateTransaction { () throws(SQLiteError) in
                // Again under the write lock: another process may have changed the file since the open.
                try LibrarySchema.check(connection, migrations: Self.migrations)
                let version = try schemaVersion
                for (index, migration) in Self.migrations.enumerated() where index >= version {
                    try connection.execute(migration)
                }
                try connection.execute("PRAGMA user_version = \(Self.migrations.count)")
            }
        } catch {
            throw LibraryError(error, path: path)
        }
    }

    /// Caps the file at the pages it has now: the next write that needs a page fails as on a
    /// full disk (SQLITE_FULL). For tests.
    package func limitPagesForTests() throws(LibraryError) {
        do {
            var pages: Int64 = 0
            try connection.run("PRAGMA page_count") { pages = $0.integer(0) }
            try connection.run("PRAGMA max_page_count = \(pages)")
        } catch {
            throw LibraryError(error, path: path)
        }
    }

    // MARK: Reading

    /// Every column but `search_text` (made from title, artist and station) and the
    /// fingerprint itself, of which only its length is read.
    private static let columns = """
        id, path, station_id, station_name, title, artist, started_at, seconds, codec, bitrate, complete, loudness, gain, peak, \
        length(fingerprint), added_at
        """

    private static func entry(_ row: SQLiteStatement) -> LibraryEntry {
        var entry = LibraryEntry(
            path: row.text(1) ?? "", stationID: row.text(2), stationName: row.text(3), title: row.text(4), artist: row.text(5),
            startedAt: row.text(6).flatMap(LibraryEntry.date(fromUTCStamp:)) ?? Date(timeIntervalSince1970: 0),
            seconds: row.real(7), codec: row.text(8), bitrate: row.isNull(9) ? nil : Int(row.integer(9)),
            isComplete: row.integer(10) != 0)
        entry.id = row.integer(0)
        entry.loudness = row.isNull(11) ? nil : row.real(11)
        entry.gain = row.isNull(12) ? nil : row.real(12)
        entry.peak = row.isNull(13) ? nil : row.real(13)
        entry.storedFingerprintValues = row.isNull(14) ? nil : Int(row.integer(14)) / 4
        entry.addedAt = row.text(15).flatMap(LibraryEntry.date(fromUTCStamp:))
        return entry
    }

    /// Every entry, newest first; with `limit`, that many after the newest `offset`.
    package func list(limit: Int? = nil, offset: Int = 0) throws(LibraryError) -> [LibraryEntry] {
        try entries("SELECT \(Self.columns) FROM tracks ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?",
                    [.integer(Int64(limit ?? -1)), .integer(Int64(offset))])
    }

    /// Entries whose title, artist or station contains `query`, ignoring case (all of Unicode), newest first.
    package func search(_ query: String) throws(LibraryError) -> [LibraryEntry] {
        try entries("SELECT \(Self.columns) FROM tracks WHERE instr(search_text, ?) > 0 ORDER BY started_at DESC, id DESC",
                    [.text(query.lowercased())])
    }

    package func entry(path: String) throws(LibraryError) -> LibraryEntry? {
        try entries("SELECT \(Self.columns) FROM tracks WHERE path = ?", [.text(path)]).first
    }

    package func entry(id: Int64) throws(LibraryError) -> LibraryEntry? {
        try entries("SELECT \(Self.columns) FROM tracks WHERE id = ?", [.integer(id)]).first
    }

    /// `search`, at most `limit` entries after the newest `offset`: a page shows the newest
    /// matches, not all of them.
    package func search(_ query: String, limit: Int, offset: Int = 0) throws(LibraryError) -> [LibraryEntry] {
        try entries("SELECT \(Self.columns) FROM tracks WHERE instr(search_text, ?) > 0 ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?",
                    [.text(query.lowercased()), .integer(Int64(limit)), .integer(Int64(offset))])
    }

    private func entries(_ sql: String, _ values: [SQLiteValue]) throws(LibraryError) -> [LibraryEntry] {
        var found: [LibraryEntry] = []
        do {
            try connection.run(sql, values) { found.append(Self.entry($0)) }
        } catch {
            throw LibraryError(error, path: path)
        }
        return found
    }

    // MARK: Writing

    /// What `add` did with a track.
    enum Outcome: Sendable, Hashable {
        /// In the index now. `replacing`: the incomplete duplicates it took the place of (their
        /// entries are gone; their files are the caller's to remove).
        case added(replacing: [LibraryEntry])
        /// The same recording is in the library already (`earlier`): not added.
        case duplicate(of: LibraryEntry, alignment: FingerprintAlignment)
    }

    /// Adds `entry`. With `dedupe`, its fingerprint is first looked up, in the same transaction
    /// (two recorders finishing the same song at once cannot both keep it): an earlier complete
    /// copy, or any earlier copy of a partial track, makes it a duplicate; a complete track
    /// replaces the incomplete copies `mayReplace` allows (the others stay, entry and file).
    /// An entry whose file is gone never counts as a copy.
    /// An entry already there for the same path is replaced (a scan run twice).
    func add(_ entry: LibraryEntry, dedupe: Bool, fileExists: (String) -> Bool = LibraryIndex.fileExists,
             mayReplace: (LibraryEntry) -> Bool = { _ in true }) throws(LibraryError) -> Outcome {
        do {
            return try connection.immediateTransaction { () throws(SQLiteError) -> Outcome in
                var replaced: [LibraryEntry] = []
                if dedupe, let fingerprint = entry.fingerprint, !fingerprint.values.isEmpty {
                    for (earlier, alignment) in try copies(of: fingerprint, excluding: entry.path) {
                        guard fileExists(earlier.path) else {
                            try delete(id: earlier.id)
                            continue
                        }
                        if earlier.isComplete || !entry.isComplete {
                            return .duplicate(of: earlier, alignment: alignment)
                        }
                        if mayReplace(earlier) { replaced.append(earlier) }
                    }
                    for earlier in replaced { try delete(id: earlier.id) }
                }
                try insert(entry)
                return .added(replacing: replaced)
            }
        } catch {
            throw LibraryError(error, path: path)
        }
    }

    /// Adds `entries` in one transaction, without dedupe: a batch costs one commit.
    package func add(_ entries: [LibraryEntry]) throws(LibraryError) {
        do {
            try connection.immediateTransaction { () throws(SQLiteError) in
                for entry in entries { try insert(entry) }
            }
        } catch {
            throw LibraryError(error, path: path)
        }
    }

    private func insert(_ entry: LibraryEntry) throws(SQLiteError) {
        try connection.run("DELETE FROM tracks WHERE path = ?", [.text(entry.path)])
        let fingerprint = entry.fingerprint.map { SQLiteValue.blob($0.bytes) } ?? .null
        try connection.run("""
            INSERT INTO tracks (path, station_id, station_name, title, artist, started_at, seconds, codec, bitrate, complete,
                                fingerprint, loudness, gain, peak, search_text, added_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [
            .text(entry.path), Self.optional(entry.stationID), Self.optional(entry.stationName), Self.optional(entry.title),
            Self.optional(entry.artist), .text(LibraryEntry.utcStamp(entry.startedAt)), .real(entry.seconds),
            Self.optional(entry.codec), entry.bitrate.map { .integer(Int64($0)) } ?? .null, .integer(entry.isComplete ? 1 : 0),
            fingerprint, entry.loudness.map(SQLiteValue.real) ?? .null, entry.gain.map(SQLiteValue.real) ?? .null,
            entry.peak.map(SQLiteValue.real) ?? .null, .text(entry.searchText), .text(LibraryEntry.utcStamp(Date())),
        ])
        let id = connection.lastInsertRowID
        guard let fingerprint = entry.fingerprint else { return }
        let statement = try connection.prepare("INSERT OR IGNORE INTO fingerprint_terms (term, track_id, position) VALUES (?, ?, ?)")
        for term in FingerprintMatcher.terms(of: fingerprint) {
            try statement.bind([.integer(term.term), .integer(id), .integer(Int64(term.position))])
            _ = try statement.step()
        }
    }

    /// Keeps `folder` (absolute) as one this index's files are recorded into or scanned from.
    package func addFolder(_ folder: String) throws(LibraryError) {
        do {
            try connection.run("INSERT OR IGNORE INTO folders (path, added_at) VALUES (?, ?)",
                               [.text(folder), .text(LibraryEntry.utcStamp(Date()))])
        } catch {
            throw LibraryError(error, path: path)
        }
    }

    /// The folders recorded into and scanned, as they were given (links not resolved).
    package func folders() throws(LibraryError) -> [String] {
        var found: [String] = []
        do {
            try connection.run("SELECT path FROM folders ORDER BY path LIMIT \(Self.maxFolders)") { row in
                if let path = row.text(0) { found.append(path) }
            }
        } catch {
            throw LibraryError(error, path: path)
        }
        return found
    }

    private static func optional(_ text: String?) -> SQLiteValue {
        text.map(SQLiteValue.text) ?? .null
    }

    private func delete(id: Int64) throws(SQLiteError) {
        try connection.run("DELETE FROM tracks WHERE id = ?", [.integer(id)])
    }

    private func copies(of fingerprint: Fingerprint, excluding excludedPath: String) throws(SQLiteError) -> [(entry: LibraryEntry, alignment: FingerprintAlignment)] {
        let lookup = try connection.prepare("SELECT track_id, position FROM fingerprint_terms WHERE term = ? LIMIT \(Self.maxRowsPerTerm)")
        var hits: [(track: Int64, position: Int, queryPosition: Int)] = []
        for term in FingerprintMatcher.terms(of: fingerprint) {
            try lookup.bind([.integer(term.term)])
            while try lookup.step() {
                hits.append((lookup.integer(0), Int(lookup.integer(1)), term.position))
            }
        }
        let candidates = FingerprintMatcher.candidates(from: hits, limit: Self.maxCandidates)
        let load = try connection.prepare("SELECT \(Self.columns), fingerprint FROM tracks WHERE id = ?")
        var found: [(entry: LibraryEntry, alignment: FingerprintAlignment)] = []
        for candidate in candidates {
            try load.bind([.integer(candidate.track)])
            guard try load.step() else { continue }
            let entry = Self.entry(load)
            guard entry.path != excludedPath, let stored = Fingerprint(bytes: load.blob(16)),
                  let alignment = FingerprintMatcher.match(fingerprint.values, stored.values, near: candidate.offset) else { continue }
            found.append((entry, alignment))
        }
        return found.sorted { $0.alignment.bitErrorRate < $1.alignment.bitErrorRate }
    }

    /// Drops the entries whose files are gone; returns them.
    package func prune(fileExists: (String) -> Bool = LibraryIndex.fileExists) throws(LibraryError) -> [LibraryEntry] {
        let gone = try list().filter { !fileExists($0.path) }
        do {
            try connection.immediateTransaction { () throws(SQLiteError) in
                for entry in gone { try delete(id: entry.id) }
            }
        } catch {
            throw LibraryError(error, path: path)
        }
        return gone
    }

    package func remove(path: String) throws(LibraryError) {
        do {
            try connection.run("DELETE FROM tracks WHERE path = ?", [.text(path)])
        } catch {
            throw LibraryError(error, path: path)
        }
    }

    /// `PRAGMA integrity_check`'s answer: "ok" for a sound file.
    package func integrityCheck() throws(LibraryError) -> String {
        var lines: [String] = []
        do {
            try connection.run("PRAGMA integrity_check") { lines.append($0.text(0) ?? "") }
        } catch {
            throw LibraryError(error, path: path)
        }
        return lines.joined(separator: "\n")
    }

    package static func fileExists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }
}
