import AirtapKit
import AirtapStations
import AirtapSupport
import ArgumentParser

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
        Terminal.output(StationTable.heading(source: source))
        for line in StationTable(catalog.stations).lines { Terminal.output(line) }
    }
}
