import AirtapKit
import ArgumentParser
import ICYWire

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the stations of stations.json.")

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let catalog = try global.loadCatalog()
        guard let source = catalog.source else {
            Terminal.error("airtap: no stations.json found (looked in \(StationCatalog.searchPaths().joined(separator: ", ")))")
            return
        }
        let width = max(2, catalog.stations.map(\.id.count).max() ?? 0)
        Terminal.output("# \(source)")
        for station in catalog.stations {
            let id = station.id.padded(toLength: width)
            let schedule = station.schedule.map { "  [\($0.cron) for \($0.duration)]" } ?? ""
            Terminal.output("\(id)  \(station.name)  \(station.urls.map(URLCredentials.redacted).joined(separator: " "))\(schedule)")
        }
    }
}
