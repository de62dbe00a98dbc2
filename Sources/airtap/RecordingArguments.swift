import AirtapCuts
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import ArgumentParser
import RecordingRules

/// What `record` takes to decide where and how tracks are written; `play --record` and
/// `serve --record` take the same options.
struct RecordingArguments: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Stop a station once its files reach this size (500k, 700M, 2G).", valueName: "size"))
    var maxSize: ByteSize?

    @Option(name: [.long, .short], help: ArgumentHelp("Output folder.", valueName: "dir"))
    var out = "recordings"

    @Option(name: .long, help: ArgumentHelp("File names: {station} {artist} {title} {date} {time} {seq}, / for folders.", valueName: "template"))
    var template: String?

    @Option(name: .long, help: ArgumentHelp("Write everything into one file, with FILE.cue beside it.", valueName: "file"))
    var single: String?

    @Flag(name: .long, help: "Add an ID3v1 tag at the end of each file too.")
    var id3v1 = false

    @Flag(name: .long, help: "Write bare frames: no ID3 tags.")
    var noTags = false

    @Flag(name: .long, help: "ReplayGain tags from each track's measured loudness, without the library index (on with the library).")
    var replaygain = false

    @Flag(name: .long, help: "No ReplayGain tags even with the library on (stations.json \"library\", --library).")
    var noReplaygain = false

    @Option(name: .long, help: ArgumentHelp("Tracks shorter than this go to incomplete/ (jingles, ads).", valueName: "duration"))
    var minTrack: DurationSpec?

    @Option(name: .long, help: ArgumentHelp("Run after each complete track with the file as its argument; AIRTAP_ARTIST, AIRTAP_TITLE, AIRTAP_STATION in its environment.", valueName: "command"))
    var onTrackDone: String?

    @Flag(name: .long, help: "Wait for another recording of the same station to end instead of exiting 4.")
    var wait = false

    @Option(name: .long, help: ArgumentHelp("Keep only tracks whose \"Artist - Title\" matches a pattern in this file (one a line; * and ? match the whole title, other text any part; case-insensitive).", valueName: "file"))
    var keepOnly: String?

    @Option(name: .long, help: ArgumentHelp("Do not keep tracks whose \"Artist - Title\" matches a pattern in this file (as --keep-only).", valueName: "file"))
    var skip: String?

    @Option(name: .long, help: ArgumentHelp("Turn the library on with this index: each kept track is fingerprinted and indexed, with ReplayGain tags (default index when stations.json's \"library\" turns it on: $XDG_DATA_HOME/airtap/library.sqlite, else ~/.local/share/airtap/library.sqlite).", valueName: "file"))
    var library: String?

    @Flag(name: .long, help: "The library off, although stations.json's \"library\" turns it on.")
    var noLibrary = false

    @Flag(name: .long, help: "Keep no track whose audio (its Chromaprint fingerprint) is in the library already, whatever its title (turns the library on).")
    var dedupe = false

    @OptionGroup(title: "Split points") var split: SplitArguments

    func validate() throws {
        if single != nil, let padding = split.splitPadding, (try? SplitOptions.parsePadding(padding)).map({ $0 != (0, 0) }) ?? true {
            // One file: a copied frame would play twice.
            throw ValidationError("--split-padding does not apply to --single")
        }
        if noLibrary, dedupe || library != nil {
            throw ValidationError("--no-library contradicts \(dedupe ? "--dedupe" : "--library")")
        }
        if replaygain, noReplaygain {
            throw ValidationError("--no-replaygain contradicts --replaygain")
        }
        if single != nil, dedupe {
            throw ValidationError("--dedupe compares tracks: it does not apply to --single")
        }
        if single != nil, library != nil {
            throw ValidationError("--library indexes tracks: it does not apply to --single")
        }
        if noTags, replaygain {
            throw ValidationError("--replaygain writes tags: it does not apply to --no-tags")
        }
        if let template {
            do { try RecordingPlan.checkTemplate(template) } catch { throw ValidationError(error.description) }
        }
        if single != nil, keepOnly != nil || skip != nil {
            // One file holds every track: there is no track to leave out.
            throw ValidationError("\(keepOnly != nil ? "--keep-only" : "--skip") does not apply to --single")
        }
    }

    /// The library options over stations.json's `"library"`.
    var libraryRequest: LibraryRequest {
        LibraryRequest(path: library, off: noLibrary, dedupe: dedupe, replayGain: replaygain, noReplayGain: noReplaygain)
    }

    /// The plan every recorder of the job follows; its output folder is made absolute and
    /// created when the job starts. `librarySetting`: stations.json's `"library"`.
    func plan(librarySetting: LibrarySetting?) throws(AirtapError) -> RecordingPlan {
        var plan = RecordingPlan(outputDirectory: out)
        plan.template = template
        plan.singleFile = single
        plan.writesTags = !noTags
        plan.writesID3v1 = id3v1
        plan.minimumTrackSeconds = minTrack?.seconds
        plan.onTrackDone = onTrackDone
        plan.maxBytes = maxSize?.bytes
        plan.waitsForLock = wait
        (plan.library, plan.measuresLoudness) = libraryRequest.resolve(over: librarySetting)
        plan.keepRule = KeepRule(
            keepOnly: try keepOnly.map { path throws(AirtapError) in try TitleList.load(path, describe: "--keep-only", asUsage: true) },
            skip: try skip.map { path throws(AirtapError) in try TitleList.load(path, describe: "--skip", asUsage: true) })
        try split.apply(to: &plan)
        return plan
    }
}
