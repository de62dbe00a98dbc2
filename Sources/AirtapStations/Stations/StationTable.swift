import ICYWire

/// The stations as aligned columns: ID, NAME, URL (the first; "+N" counts the fallbacks), SCHEDULE.
package struct StationTable {
    package let rows: [[String]]

    package init(_ stations: [Station]) {
        let header = ["ID", "NAME", "URL", "SCHEDULE"]
        rows = [header] + stations.map { station in
            let fallbacks = station.urls.count > 1 ? " +\(station.urls.count - 1)" : ""
            let schedule = station.schedule.map { "\($0.cron) for \($0.duration)" } ?? ""
            // Credentials in a station URL are never shown (URLCredentials).
            // Inert: stations.json is text anyone may have written (a name holding ESC sequences).
            return [station.id, station.name, (station.urls.first.map(URLCredentials.redacted) ?? "") + fallbacks, schedule]
                .map { InertText.render($0) }
        }
    }

    /// The line above the table: which stations file this is (inert: a path is text too).
    package static func heading(source: String) -> String {
        "# \(InertText.render(source))"
    }

    /// Every column as wide as its widest cell, two spaces apart; no trailing spaces.
    package var lines: [String] {
        let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                line += column == row.count - 1 ? cell : cell.padded(toLength: widths[column]) + "  "
            }
            while line.last == " " { line.removeLast() }
            return line
        }
    }
}
