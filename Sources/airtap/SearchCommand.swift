import AirtapKit
import AirtapStations
import AirtapSupport
import ArgumentParser

/// `--directory URL` and `--timeout`: how `search` and `add --from-directory` reach the station directory.
struct DirectoryOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("A station directory server (radio-browser's API) to ask instead of the public ones (default: $AIRTAP_DIRECTORY, else the servers of all.api.radio-browser.info).", valueName: "url"))
    var directory: String?

    @Option(name: .long, help: ArgumentHelp("How long one directory server may take to answer.", valueName: "duration"))
    var timeout = DurationSpec(seconds: 15)

    func validate() throws {
        guard timeout.seconds > 0, timeout.seconds <= 600 else { throw ValidationError("--timeout must be more than 0 and at most 10m") }
    }

    var plan: DirectoryPlan { DirectoryPlan(directory: directory, timeLimit: timeout.seconds) }
}

/// `airtap search QUERY`: stations from the public station directory.
struct SearchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Find stations in the public station directory (radio-browser).",
        discussion: """
            Lists working stations whose name contains the query, the most listened first: name, codec, \
            bitrate, country, tags and the station's uuid, which 'airtap add ID --from-directory UUID' \
            adds to stations.json. Exit 2 when the directory cannot be reached or answers garbage.
            """)

    @OptionGroup var global: GlobalOptions
    @OptionGroup var directory: DirectoryOptions

    @Argument(help: ArgumentHelp("Part of the station's name (none: any).", valueName: "query"))
    var query: String?

    @Option(name: .long, help: ArgumentHelp("Only stations with this tag (jazz, news, ...).", valueName: "tag"))
    var tag: String?

    @Option(name: .long, help: ArgumentHelp("Only stations of this country: a two-letter code (FI) or its name.", valueName: "country"))
    var country: String?

    @Option(name: .long, help: ArgumentHelp("Only stations in this codec (MP3, AAC, AAC+, OGG).", valueName: "codec"))
    var codec: String?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("At most this many stations (1-\(DirectoryQuery.maxLimit)).", valueName: "n"))
    var limit = 20

    @Flag(name: .long, help: "One JSON object per station on stdout (README: Machine-readable output).")
    var json = false

    func validate() throws {
        guard (1...DirectoryQuery.maxLimit).contains(limit) else { throw ValidationError("--limit must be 1-\(DirectoryQuery.maxLimit)") }
    }

    func run() async throws {
        let query = DirectoryQuery(name: query, tag: tag, country: country, codec: codec, limit: limit)
        let stations = try await DirectoryJobs.search(query, plan: directory.plan)
        if json {
            let writer = MachineEventWriter(write: Terminal.output)
            for station in stations { writer.emit(.directoryStation(station)) }
            return
        }
        guard !stations.isEmpty else {
            Terminal.error("airtap: no station in the directory matches")
            return
        }
        for line in DirectoryTable(stations).lines { Terminal.output(line) }
    }
}
