import AirtapStations
import FoundationEssentials

/// A command's library options over the stations file's setting: what a recording pays for.
/// A flag wins over the file; the file's setting holds where no flag speaks. `--no-library`
/// turns all of the library's work off, ReplayGain included unless `--replaygain` asks for it.
package struct LibraryRequest: Sendable, Hashable {
    /// `--library FILE`: the index on, at FILE.
    package var path: String?
    /// `--no-library`.
    package var off = false
    /// `--dedupe` (turns the index on: it needs one).
    package var dedupe = false
    /// `--replaygain`.
    package var replayGain = false
    /// `--no-replaygain`.
    package var noReplayGain = false

    package init(path: String? = nil, off: Bool = false, dedupe: Bool = false, replayGain: Bool = false, noReplayGain: Bool = false) {
        self.path = path
        self.off = off
        self.dedupe = dedupe
        self.replayGain = replayGain
        self.noReplayGain = noReplayGain
    }

    /// The index the recording joins and whether it measures loudness.
    package func resolve(over setting: LibrarySetting?) -> (library: LibraryChoice, measuresLoudness: Bool) {
        let fromFile = setting?.isOn == true ? setting : nil
        let uses = !off && (path != nil || dedupe || fromFile != nil)
        let library = LibraryChoice(uses: uses, path: path ?? fromFile?.path, dedupes: uses && (dedupe || fromFile?.dedupe == true))
        // The library's loudness, unless the file's setting leaves it out; `--replaygain` alone
        // measures it without the index.
        let loudness = !noReplayGain && (replayGain || (uses && (fromFile?.replayGain ?? true)))
        return (library, loudness)
    }
}

/// Which library index a recording job adds its kept tracks to (`LibraryRequest.resolve`).
package struct LibraryChoice: Sendable, Hashable {
    /// False: the library is off (the default, or `--no-library`).
    package var uses = false
    /// `--library FILE`; nil: the default path, or none when it cannot be opened.
    package var path: String?
    /// `--dedupe`: a track whose audio the library holds already is not kept.
    package var dedupes = false

    /// The index file, absolute, when the library is on: its `path`, else the default one.
    package func indexPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard uses else { return nil }
        guard let path else { return LibraryIndex.defaultPath(environment: environment) }
        return URL(fileURLWithPath: path).standardizedFileURL.path
    }

    package init(uses: Bool = false, path: String? = nil, dedupes: Bool = false) {
        self.uses = uses
        self.path = path
        self.dedupes = dedupes
    }
}
