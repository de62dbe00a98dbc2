import AirtapKit
import AirtapRecording
import AirtapSupport
import ArgumentParser

struct LibraryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "library",
        abstract: "List, search, scan and prune the library index of kept tracks.",
        subcommands: [ListEntries.self, Search.self, Scan.self, Prune.self])

    /// `--library FILE`, for every subcommand.
    struct Location: ParsableArguments {
        @Option(name: .long, help: ArgumentHelp("The library index (default: stations.json's \"library\" path, else $XDG_DATA_HOME/airtap/library.sqlite, else ~/.local/share/airtap/library.sqlite).", valueName: "file"))
        var library: String?

        @OptionGroup var global: GlobalOptions

        /// The index the recordings join: `--library`, else the one stations.json names, else the default.
        func open() throws(AirtapError) -> LibraryIndex {
            try LibraryCatalog.open(commandLinePath: try chosenPath())
        }

        /// The index for a subcommand that only reads: nil (and a line saying so) when there is
        /// none yet, so that reading never creates one.
        func openExisting() throws(AirtapError) -> LibraryIndex? {
            let (index, path) = try LibraryCatalog.openExisting(commandLinePath: try chosenPath())
            if index == nil { Terminal.error(LibraryCatalog.missingIndexLine(path)) }
            return index
        }

        private func chosenPath() throws(AirtapError) -> String? {
            if let library { return library }
            let setting = try global.loadCatalog().library
            return setting?.isOn == true ? setting?.path : nil
        }
    }

    static func show(_ entries: [LibraryEntry], json: Bool) {
        for line in json ? LibraryCatalog.jsonLines(entries) : LibraryCatalog.table(entries) { Terminal.output(line) }
    }

    struct ListEntries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "Every track in the library, newest first (* marks a partial track).")

        @OptionGroup var location: Location

        @Flag(name: .long, help: "One JSON object per track on stdout.")
        var json = false

        func run() async throws {
            LibraryCommand.show(try location.openExisting()?.list() ?? [], json: json)
        }
    }

    struct Search: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Tracks whose title, artist or station contains the text, ignoring case; newest first.")

        @OptionGroup var location: Location

        @Argument(help: "The text to look for.")
        var query: String

        @Flag(name: .long, help: "One JSON object per track on stdout.")
        var json = false

        func run() async throws {
            LibraryCommand.show(try location.openExisting()?.search(query) ?? [], json: json)
        }
    }

    struct Scan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Index the audio files below a folder (MP3, AAC, Ogg Vorbis, Opus) from their tags and audio.")

        @OptionGroup var location: Location

        @Argument(help: ArgumentHelp("The folder to scan.", valueName: "dir"))
        var folder: String

        func run() async throws {
            let index = try location.open()
            let report = try LibraryCatalog.scan(commandLinePath: folder, into: index)
            for skipped in report.skipped { Terminal.error(LibraryCatalog.skippedLine(skipped)) }
            Terminal.output("indexed \(report.added.count) file\(report.added.count == 1 ? "" : "s")")
        }
    }

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drop the entries whose files are gone.")

        @OptionGroup var location: Location

        func run() async throws {
            let gone = try location.openExisting()?.prune() ?? []
            for entry in gone { Terminal.output(LibraryCatalog.droppedLine(entry)) }
            Terminal.output("dropped \(gone.count) entr\(gone.count == 1 ? "y" : "ies")")
        }
    }
}
