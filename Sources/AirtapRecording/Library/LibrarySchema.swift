import ICYWire
import SQLiteStore

/// One object of a database's schema, as `sqlite_master` lists it.
struct SchemaObject: Sendable, Hashable, Comparable {
    let type: String
    let name: String
    let table: String
    /// The statement that made it; nil for the indexes SQLite makes itself (UNIQUE, PRIMARY KEY).
    let sql: String?

    static func < (lhs: SchemaObject, rhs: SchemaObject) -> Bool {
        (lhs.type, lhs.name) < (rhs.type, rhs.name)
    }
}

/// What makes a file an airtap index: its `user_version` counts the migrations applied, and its
/// schema is exactly what those migrations make, statement for statement. Anything else is
/// refused before airtap writes a byte: another program's database (airtap's tables must not be
/// added to it), or an index where someone planted a trigger or a view (a trigger would run
/// inside airtap's own transactions, with its rights, on every track).
enum LibrarySchema {
    /// SQLite's own tables that `ANALYZE` makes: statistics for the query planner, no code.
    static let plannerStatistics: Set<String> = ["sqlite_stat1", "sqlite_stat2", "sqlite_stat3", "sqlite_stat4"]

    /// Throws `notADatabase` with a one-line reason unless `connection`'s schema is what
    /// `migrations` make at the version the file says; an empty new file passes.
    static func check(_ connection: SQLiteConnection, migrations: [String]) throws(SQLiteError) {
        // The version and the schema in one statement, so one snapshot: another opener that commits
        // its migration between two reads would otherwise show its tables without their version.
        var version = 0
        var found: Set<SchemaObject> = []
        let query = "SELECT v.user_version, m.type, m.name, m.tbl_name, m.sql FROM pragma_user_version AS v LEFT JOIN sqlite_master AS m"
        try connection.run(query) { row in
            version = Int(row.integer(0))
            guard let type = row.text(1) else { return }
            let object = SchemaObject(type: type, name: row.text(2) ?? "", table: row.text(3) ?? "", sql: row.text(4))
            if object.type == "table", plannerStatistics.contains(object.name) { return }
            found.insert(object)
        }
        guard version <= migrations.count else {
            throw .notADatabase("schema version \(version) is newer than this airtap knows (\(migrations.count))")
        }
        let expected = try objects(afterApplying: migrations.prefix(version))
        if version == 0, let first = found.sorted().first {
            throw .notADatabase("not an airtap index (it holds \(describe(first)) and no airtap schema version); refusing to use it")
        }
        if let foreign = found.subtracting(expected).sorted().first {
            throw .notADatabase("not an index as airtap makes it: \(describe(foreign)) is not airtap's; refusing to use it")
        }
        if let missing = expected.subtracting(found).sorted().first {
            throw .notADatabase("not an index as airtap makes it: \(describe(missing)) is missing; refusing to use it")
        }
    }

    /// The file's schema, less the planner's statistics tables.
    static func objects(in connection: SQLiteConnection) throws(SQLiteError) -> Set<SchemaObject> {
        var found: Set<SchemaObject> = []
        try connection.run("SELECT type, name, tbl_name, sql FROM sqlite_master") { row in
            let object = SchemaObject(type: row.text(0) ?? "", name: row.text(1) ?? "", table: row.text(2) ?? "", sql: row.text(3))
            if object.type == "table", plannerStatistics.contains(object.name) { return }
            found.insert(object)
        }
        return found
    }

    /// The schema `migrations` make, built in a database in memory.
    static func objects(afterApplying migrations: ArraySlice<String>) throws(SQLiteError) -> Set<SchemaObject> {
        let scratch = try SQLiteConnection(path: ":memory:")
        for migration in migrations { try scratch.execute(migration) }
        return try objects(in: scratch)
    }

    private static func describe(_ object: SchemaObject) -> String {
        "\(InertText.render(object.type, maxUTF8Bytes: 20)) \"\(InertText.render(object.name, maxUTF8Bytes: 100))\""
    }
}
