import CSQLite

/// A failed SQLite call: the extended result code and SQLite's own message.
package struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    package let code: Int32
    package let message: String

    package init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// A file that is not a database this program can use (SQLITE_NOTADB).
    package static func notADatabase(_ message: String) -> SQLiteError {
        SQLiteError(code: SQLITE_NOTADB, message: message)
    }

    /// The disk (or the database's size limit) is full: nothing was written.
    package var isFull: Bool { code & 0xff == SQLITE_FULL }
    /// Another process held the lock for longer than the busy timeout.
    package var isBusy: Bool { code & 0xff == SQLITE_BUSY || code & 0xff == SQLITE_LOCKED }
    /// The file is not a database, or is damaged.
    package var isCorrupt: Bool { code & 0xff == SQLITE_NOTADB || code & 0xff == SQLITE_CORRUPT }

    package var description: String { message }
}

/// A value bound to a statement's parameter.
package enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// One connection to one database file. Owns a C handle: used from one thread at a time (the
/// caller's lock), so it is not Sendable.
package final class SQLiteConnection {
    private let handle: OpaquePointer
    private let busyTimeoutMilliseconds: Int32

    /// Opens (creating) the database at `path`. `busyTimeout`: how long a statement waits for
    /// another process's write lock before failing with `isBusy`.
    package init(path: String, busyTimeoutMilliseconds: Int32 = 10_000) throws(SQLiteError) {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
        let status = sqlite3_open_v2(path, &opened, flags, nil)
        guard status == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open \(path)"
            if let opened { sqlite3_close_v2(opened) }
            throw SQLiteError(code: status, message: message)
        }
        handle = opened
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Puts the database in WAL mode. On a new file, several processes opening it at once race to
    /// convert it, and SQLite answers the losers SQLITE_BUSY at once, without the busy handler
    /// (a lock upgrade it will not wait on): so this tries again until the winner is done, for as
    /// long as the busy timeout (an attempt begun near its end may wait that long once more in
    /// the busy handler). A database already in WAL mode answers at once.
    package func enableWriteAheadLog() throws(SQLiteError) {
        let deadline = ContinuousClock.now + .milliseconds(busyTimeoutMilliseconds)
        var pause: Int32 = 2
        while true {
            do {
                try run("PRAGMA journal_mode=WAL")
                return
            } catch where error.isBusy && ContinuousClock.now < deadline {
                sqlite3_sleep(pause)
                pause = min(pause * 2, 100)
            }
        }
    }

    /// Runs one or more statements that return no rows.
    package func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        if status != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_free(message)
            throw SQLiteError(code: sqlite3_extended_errcode(handle), message: text)
        }
    }

    package func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status) }
        return SQLiteStatement(statement, connection: self)
    }

    /// Runs `sql` with `values` bound and steps it to the end, calling `row` for each result row.
    package func run(_ sql: String, _ values: [SQLiteValue] = [], row: (SQLiteStatement) throws(SQLiteError) -> Void = { _ in }) throws(SQLiteError) {
        let statement = try prepare(sql)
        try statement.bind(values)
        while try statement.step() {
            try row(statement)
        }
    }

    /// `body` inside `BEGIN IMMEDIATE ... COMMIT`: the write lock is taken at the start, so a
    /// read-then-write decision inside cannot race another process's. Rolled back on any error.
    package func immediateTransaction<Result>(_ body: () throws(SQLiteError) -> Result) throws(SQLiteError) -> Result {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    package var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows the last INSERT, UPDATE or DELETE changed.
    package var changes: Int { Int(sqlite3_changes(handle)) }

    func error(_ status: Int32) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }
}

/// A prepared statement; lives no longer than the connection that made it (it holds it).
package final class SQLiteStatement {
    private let statement: OpaquePointer
    private let connection: SQLiteConnection

    fileprivate init(_ statement: OpaquePointer, connection: SQLiteConnection) {
        self.statement = statement
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(statement)
    }

    /// Binds `values` to parameters 1...n (after a reset, so a statement can be run again).
    package func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null:
                status = sqlite3_bind_null(statement, index)
            case .integer(let number):
                status = sqlite3_bind_int64(statement, index, number)
            case .real(let number):
                status = sqlite3_bind_double(statement, index, number)
            case .text(let text):
                status = text.withCString { csqlite_bind_text(statement, index, $0, Int32(text.utf8.count)) }
            case .blob(let bytes):
                status = bytes.isEmpty
                    ? sqlite3_bind_zeroblob(statement, index, 0)
                    : bytes.withUnsafeBytes { csqlite_bind_blob(statement, index, $0.baseAddress, Int32($0.count)) }
            }
            guard status == SQLITE_OK else { throw connection.error(status) }
        }
    }

    /// Steps once: true when a row is ready to read, false when the statement is done.
    package func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let status: throw connection.error(status)
        }
    }

    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    package func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    package func real(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }

    package func text(_ column: Int32) -> String? {
        guard let bytes = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    package func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}
