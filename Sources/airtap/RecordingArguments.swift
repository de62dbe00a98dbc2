import AirtapKit
import ArgumentParser
import FoundationEssentials
import ICYWire
import Logging

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

    @Flag(name: .long, help: "No ReplayGain tags: do not decode each track to measure its loudness (saves the CPU of a decoder per station).")
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

    @OptionGroup(title: "Split points") var split: SplitArguments

    func validate() throws {
        if single != nil, let padding = split.splitPadding, (try? SplitOptions.parsePadding(padding)).map({ $0 != (0, 0) }) ?? true {
            // One file: a copied frame would play twice.
            throw ValidationError("--split-padding does not apply to --single")
        }
        if let template {
            do { _ = try FileNameTemplate(template) } catch { throw ValidationError("--template: \(error)") }
        }
        if single != nil, keepOnly != nil || skip != nil {
            // One file holds every track: there is no track to leave out.
            throw ValidationError("\(keepOnly != nil ? "--keep-only" : "--skip") does not apply to --single")
        }
    }

    /// The absolute output folder, created if needed.
    func makeOutputDirectory() throws(AirtapError) -> String {
        let path = URL(fileURLWithPath: out).standardizedFileURL.path
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .localIO("cannot create output folder \(path): \(describeSystemError(error))")
        }
        return path
    }

    /// One lock per station (`StationLocks`): a second recording of the same station exits 4 (or
    /// waits); what a killed run of the station left is finished first (not for `--single`).
    func lock(_ stations: [Station], in outputDirectory: String, logger: Logger) throws(AirtapError) -> [RecordingLock] {
        try StationLocks.lock(stations, in: outputDirectory, wait: wait, finishingLeftovers: single == nil, logger: logger)
    }

    /// The plan every recorder of this run follows (`outputDirectory`: from `makeOutputDirectory`).
    func plan(outputDirectory: String) throws(AirtapError) -> RecordingPlan {
        var plan = RecordingPlan(outputDirectory: outputDirectory)
        plan.template = template
        plan.singleFile = single
        plan.writesTags = !noTags
        plan.writesID3v1 = id3v1
        plan.measuresLoudness = !noReplaygain
        plan.minimumTrackSeconds = minTrack?.seconds
        plan.onTrackDone = onTrackDone
        plan.maxBytes = maxSize?.bytes
        plan.keepRule = KeepRule(
            keepOnly: try keepOnly.map { path throws(AirtapError) in try TitleList.load(path, describe: "--keep-only", asUsage: true) },
            skip: try skip.map { path throws(AirtapError) in try TitleList.load(path, describe: "--skip", asUsage: true) })
        try split.apply(to: &plan)
        return plan
    }

    /// The recorder for one station (see `StationRecorder`); `stop` ends the station's session.
    func makeRecorder(for station: Station, outputDirectory: String, logger: Logger, alignsCuts: Bool = true,
                      coalescing: Double = 0,
                      trackDoneHooks: TrackDoneHooks? = nil,
                      onFileWritten: (@Sendable (RecordedTrack) -> Void)? = nil,
                      stop: @escaping @Sendable (StopReason) -> Void) throws(AirtapError) -> StationRecorder {
        try StationRecorder(station: station, plan: plan(outputDirectory: outputDirectory), logger: logger,
                            alignsCuts: alignsCuts, coalescing: coalescing, trackDoneHooks: trackDoneHooks,
                            onFileWritten: onFileWritten, stop: stop)
    }
}
