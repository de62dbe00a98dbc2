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

    @Option(name: .long, help: ArgumentHelp("Tracks shorter than this go to incomplete/ (jingles, ads).", valueName: "duration"))
    var minTrack: DurationSpec?

    @Option(name: .long, help: ArgumentHelp("Run after each complete track with the file as its argument; AIRTAP_ARTIST, AIRTAP_TITLE, AIRTAP_STATION in its environment.", valueName: "command"))
    var onTrackDone: String?

    @Flag(name: .long, help: "Wait for another recording of the same station to end instead of exiting 4.")
    var wait = false

    @Option(name: .long, help: ArgumentHelp("The library index each kept track joins (default: $XDG_DATA_HOME/airtap/library.sqlite, else ~/.local/share/airtap/library.sqlite).", valueName: "file"))
    var library: String?

    @Flag(name: .long, help: "Add no track to the library index.")
    var noLibrary = false

    @Flag(name: .long, help: "Keep no track whose audio (its Chromaprint fingerprint) is in the library already, whatever its title.")
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
        if single != nil, dedupe {
            throw ValidationError("--dedupe compares tracks: it does not apply to --single")
        }
        if let template {
            do { _ = try FileNameTemplate(template) } catch { throw ValidationError("--template: \(error)") }
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

    /// The library index this run adds to (one for the whole process), or nil.
    func openLibrary(logger: Logger) throws(AirtapError) -> TrackLibrary? {
        guard !noLibrary, single == nil else { return nil }
        return try TrackLibrary.open(path: library.map { URL(fileURLWithPath: $0).standardizedFileURL.path }, dedupe: dedupe,
                                     environment: ProcessInfo.processInfo.environment, logger: logger)
    }

    /// The plan every recorder of this run follows (`outputDirectory`: from `makeOutputDirectory`).
    func plan(outputDirectory: String) throws(AirtapError) -> RecordingPlan {
        var plan = RecordingPlan(outputDirectory: outputDirectory)
        plan.template = template
        plan.singleFile = single
        plan.writesTags = !noTags
        plan.writesID3v1 = id3v1
        plan.minimumTrackSeconds = minTrack?.seconds
        plan.onTrackDone = onTrackDone
        plan.maxBytes = maxSize?.bytes
        try split.apply(to: &plan)
        return plan
    }

    /// The recorder for one station (see `StationRecorder`); `stop` ends the station's session.
    func makeRecorder(for station: Station, outputDirectory: String, logger: Logger, alignsCuts: Bool = true,
                      coalescing: Double = 0,
                      library: TrackLibrary? = nil,
                      trackDoneHooks: TrackDoneHooks? = nil,
                      onFileWritten: (@Sendable (RecordedTrack) -> Void)? = nil,
                      stop: @escaping @Sendable (StopReason) -> Void) throws(AirtapError) -> StationRecorder {
        var plan = try plan(outputDirectory: outputDirectory)
        plan.library = library
        return try StationRecorder(station: station, plan: plan, logger: logger,
                            alignsCuts: alignsCuts, coalescing: coalescing, trackDoneHooks: trackDoneHooks,
                            onFileWritten: onFileWritten, stop: stop)
    }
}
