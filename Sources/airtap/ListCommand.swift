import AirtapKit
import ArgumentParser
import ICYWire

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the stations of stations.json.")

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "One JSON object per station on stdout (README: Machine-readable output).")
    var json = false

    func run() async throws {
        let catalog = try global.loadCatalog()
        guard let source = catalog.source else {
            throw AirtapError.configuration(StationCatalog.noFileMessage())
        }
        if json {
            let writer = MachineEventWriter(write: Terminal.output)
            for station in catalog.stations { writer.emit(.station(station)) }
            return
        }
        Terminal.output("# \(InertText.render(source))")
        for line in StationTable(catalog.stations).lines { Terminal.output(line) }
    }
}

/// The stations as aligned columns: ID, NAME, URL (the first; "+N" counts the fallbacks), SCHEDULE.
struct StationTable {
    let rows: [[String]]

    init(_ stations: [Station]) {
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

    /// Every column as wide as its widest cell, two spaces apart; no trailing spaces.
    var lines: [String] {
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
