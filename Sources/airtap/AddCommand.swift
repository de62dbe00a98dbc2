import AirtapKit
import AirtapStations
import AirtapSupport
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
            take turns under a lock beside the file. With --from-directory UUID (a uuid 'airtap search' \
            shows) the station comes from the station directory: its name, stream (url_resolved, http or \
            https only), genre (tags) and homepage; play and record then count a click for it there, at \
            most once a day.
            """)

    @OptionGroup var global: GlobalOptions

    @Argument(help: ArgumentHelp("The new station's id.", valueName: "id"))
    var id: String

    @Argument(help: ArgumentHelp("An http(s) stream URL, or a local .pls/.m3u file whose streams become the station's URLs.", valueName: "url-or-playlist"))
    var source: String?

    @Option(name: .long, help: ArgumentHelp("Add this station of the station directory (its uuid, as 'airtap search' shows) instead of a URL.", valueName: "uuid"))
    var fromDirectory: String?

    @OptionGroup(title: "Station directory (--from-directory)") var directory: DirectoryOptions

    @Option(name: .long, help: ArgumentHelp("The station's name (default: the id).", valueName: "text"))
    var name: String?

    func validate() throws {
        switch (source, fromDirectory) {
        case (nil, nil): throw ValidationError("Missing expected argument '<url-or-playlist>' (or --from-directory UUID)")
        case (_?, _?): throw ValidationError("give a URL or --from-directory UUID, not both")
        default: if fromDirectory != nil, name != nil { throw ValidationError("--name comes from the directory with --from-directory") }
        }
    }

    func run() async throws {
        let path = StationCatalog.fileForAdding(explicitPath: global.stations)
        if let fromDirectory {
            let entry = try await DirectoryJobs.add(id: id, uuid: fromDirectory, plan: directory.plan, toFileAt: path)
            Terminal.output(entry.addedLine(id: id, path: path))
            return
        }
        let urls = try StationCatalog.streamURLs(from: source ?? "")
        try StationCatalog.add(id: id, name: name, urls: urls, toFileAt: path)
        Terminal.output("added \(id) to \(path)")
    }
}
