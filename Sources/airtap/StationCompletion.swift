import AirtapKit
import AirtapStations
import ArgumentParser

/// Shell completion of a station argument: the ids of the stations file the command line names
/// (`--stations FILE`), or of the one airtap would find. The shell runs airtap to ask, so this
/// reads the file at completion time and never fails: a missing or broken file completes nothing.
enum StationCompletion {
    static let kind = CompletionKind.custom { words, _, prefix in
        ids(commandLine: words).filter { $0.hasPrefix(prefix) }
    }

    static func ids(commandLine words: [String]) -> [String] {
        var explicitPath: String?
        for (index, word) in words.enumerated() {
            if word == "--stations", index + 1 < words.count {
                explicitPath = words[index + 1]
            } else if word.hasPrefix("--stations=") {
                explicitPath = String(word.dropFirst("--stations=".count))
            }
        }
        guard let catalog = try? StationCatalog.load(explicitPath: explicitPath) else { return [] }
        return catalog.stations.map(\.id)
    }
}
