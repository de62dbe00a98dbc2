import AirtapCuts
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import ArgumentParser
import FoundationEssentials

/// Where a recording cuts at a title change: `--split-*` and `--silence-*` (see README, "Split points").
struct SplitArguments: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Audio searched for silence before and after each title change (default 3:3; bare numbers are seconds).", valueName: "before:after"))
    var splitWindow: String?

    // Unconditional: the value is negative, and must not read as an option.
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Frames quieter than this are silent.", valueName: "dBFS"))
    var silenceLevel: Double = SplitOptions.standard.silenceLevel

    @Option(name: .long, help: ArgumentHelp("Shortest silence that counts as a gap (default 300ms).", valueName: "duration"))
    var silenceLength: DurationSpec?

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("Move every title change by this much before searching: negative when the station's titles come late (overrides the station's splitOffsetMs).", valueName: "ms"))
    var splitOffset: String?

    @Option(name: .long, help: ArgumentHelp("Copy audio across each cut: PREV ms after it also end the previous file, NEXT ms before it also start the next (default 0:0).", valueName: "prev:next"))
    var splitPadding: String?

    @Flag(name: .long, help: "Cut where the title arrives (plus --split-offset), without looking for silence.")
    var noSilenceSearch = false

    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("How long after its song a title arrives: auto (learned per station), off, or seconds (negative when titles come early; overrides the station's titleDelay).", valueName: "seconds"))
    var titleDelay: String?

    func validate() throws {
        do {
            _ = try options(for: nil)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The options for one station: its `splitOffsetMs` unless `--split-offset` says otherwise.
    func options(for station: Station?) throws(AirtapError) -> SplitOptions {
        try splitPlan().splitOptions(for: station)
    }

    /// A plan that holds only these options: for the split search without a recorder.
    private func splitPlan() throws(AirtapError) -> RecordingPlan {
        var plan = RecordingPlan(outputDirectory: "")
        try apply(to: &plan)
        return plan
    }

    /// Puts these options into a recording plan.
    func apply(to plan: inout RecordingPlan) throws(AirtapError) {
        var options = SplitOptions.standard
        if let splitWindow {
            (options.windowBefore, options.windowAfter) = try SplitOptions.parseWindow(splitWindow)
        }
        options.silenceLevel = silenceLevel
        if let silenceLength { options.silenceLength = silenceLength.seconds }
        if let splitPadding {
            (options.paddingPrevious, options.paddingNext) = try SplitOptions.parsePadding(splitPadding)
        }
        options.searchesSilence = !noSilenceSearch
        plan.split = options
        plan.splitOffset = try splitOffset.map { text throws(AirtapError) in try SplitOptions.parseOffset(text) }
        plan.titleDelay = try titleDelay.map { text throws(AirtapError) in try TitleDelaySetting.parse(text) }
        plan.titleDelayFolder = TitleDelayJournal.folder(environment: ProcessInfo.processInfo.environment)
    }
}
