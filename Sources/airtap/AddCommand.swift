import AirtapKit
import ArgumentParser

/// `airtap add ID URL|FILE.pls`: one more station in the stations file the other commands read.
struct AddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a station to stations.json.",
        discussion: """
            Appends the station to the stations file the other commands read (--stations FILE, else \
            the first stations.json found), or creates $XDG_CONFIG_HOME/airtap/stations.json \
            (~/.config/airtap/stations.json) when there is none. The rest of the file stays as it was. \
            An id that is already there, or one serve could not mount (empty, . or .., a leading ;, \
            the server's own paths such as status or metrics), is refused (exit 1). Concurrent adds \
            take turns under a lock beside the file.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The new station's id.", valueName: "id"))
    var id: String

    @Argument(help: ArgumentHelp("An http(s) stream URL, or a local .pls/.m3u file whose streams become the station's URLs.", valueName: "url-or-playlist"))
    var source: String

    @Option(name: .long, help: ArgumentHelp("The station's name (default: the id).", valueName: "text"))
    var name: String?

    func run() async throws {
        let urls = try StationCatalog.streamURLs(from: source)
        let path = StationCatalog.fileForAdding(explicitPath: global.stations)
        try StationCatalog.add(id: id, name: name, urls: urls, toFileAt: path)
        Terminal.output("added \(id) to \(path)")
    }
}
