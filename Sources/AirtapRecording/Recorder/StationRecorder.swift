import AirtapCuts
import AirtapIngest
import AirtapStations
import AirtapSupport
import Dispatch
import FoundationEssentials
import ICYWire
import Logging
import RecordingRules

/// How stations are recorded: what `record`, `serve --record` and `play --record` make of their
/// options, and what tests and `airtap-bench` use to record the same way.
package struct RecordingPlan: Sendable {
    /// The longest a network loop rests between reads while it feeds a recording: the recorder
    /// writes what a rest brings at once (`StreamSink.batchEnded`), so a kill costs about this
    /// much of what the station had sent.
    package static let longestNetworkRest = Duration.seconds(1)

    /// The absolute output folder.
    package var outputDirectory: String
    /// `--template`; nil for the station's own `output`, else the standard one.
    package var template: String?
    /// `--single FILE`: everything into one file with a cue sheet beside it.
    package var singleFile: String?
    package var writesTags = true
    package var writesID3v1 = false
    /// ReplayGain tags from each kept track's measured loudness (with `writesTags`); off unless
    /// the library asks for it (`LibraryRequest`).
    package var measuresLoudness = false
    /// Shorter tracks go to incomplete/.
    package var minimumTrackSeconds: Double?
    /// `--on-track-done`.
    package var onTrackDone: String?
    /// `--max-size`: the station stops once its files reach it.
    package var maxBytes: Int?
    /// Where cuts go; the offset is the station's `splitOffsetMs` unless `splitOffset` is set.
    package var split = SplitOptions.standard
    /// `--split-offset`, overriding every station's own.
    package var splitOffset: Double?
    /// `--title-delay`, overriding every station's own.
    package var titleDelay: TitleDelaySetting?
    /// Where each station's learned title delay is kept between runs (`TitleDelayJournal`); nil:
    /// learned for the run only.
    package var titleDelayFolder: String?
    /// `--transcode`: the tracks are MP3 re-encoded from what the station sends.
    package var transcode: TranscodeSetting?
    /// `--wait`: wait for another recording of the same station to end instead of exiting 4.
    package var waitsForLock = false
    /// `--keep-only` and `--skip`, each overriding every station's own list; none apply to
    /// `singleFile`.
    package var keepRule = KeepRule()
    /// stations.json's `"library"` under `--library`, `--no-library`, `--dedupe`: which index the
    /// job opens (`openingLibrary`); none by default.
    package var library = LibraryChoice()
    /// The library index each kept track joins; one per process, shared by its stations.
    package var openLibrary: TrackLibrary?

    package init(outputDirectory: String) {
        self.outputDirectory = outputDirectory
    }

    /// The split options for one station: its own offset unless the plan overrides it.
    package func splitOptions(for station: Station?) throws(AirtapError) -> SplitOptions {
        var options = split
        options.offset = splitOffset ?? station?.splitOffset ?? 0
        options.titleDelay = titleDelay ?? station?.titleDelay ?? .auto
        try options.validate()
        return options
    }

    /// Where `station`'s title delay is kept, if anywhere.
    package func titleDelayJournal(for station: Station) -> TitleDelayJournal? {
        titleDelayFolder.flatMap { TitleDelayJournal(stationID: station.id, folder: $0) }
    }

    /// `sink` behind the split aligner, unless it would change nothing.
    package func aligned(_ sink: any StreamSink, for station: Station, logger: Logger) throws(AirtapError) -> any StreamSink {
        let options = try splitOptions(for: station)
        return options.isPassThrough ? sink
            : SplitAligner(sink, options: options, logger: logger, journal: titleDelayJournal(for: station))
    }
}

/// One station's recorder as every command builds it: the split aligner, then the per-track
/// (or single-file) recorder, behind a lossless queue, so a slow disk delays the files, never
/// the stream or the other stations.
package struct StationRecorder: Sendable {
    /// The sink to give the station's session: file I/O runs on its own queue.
    package let writer: QueuedSink
    /// The per-track recorder, for status lines (nil with a single file).
    package let tracks: TrackRecorder?
    /// The recorder's own failure (a full disk), known once `writer` is drained.
    package let failure: @Sendable () -> AirtapError?

    /// `stop` ends the station's session (`--max-size`, a disk error).
    /// `alignsCuts: false` for a recorder fed events the aligner already moved (a saved song).
    /// `coalescing`: 0 behind a batching network loop (`record`, `serve`); a quarter second behind
    /// a loop that wakes per read for a listener's sake (`play --record`), with a `batch` that a
    /// rest's worth of audio fills, so what a rest brings goes to disk at once.
    package init(station: Station, plan: RecordingPlan, logger: Logger, alignsCuts: Bool = true, coalescing: Double = 0,
                 batch: Int? = nil, trackDoneHooks: TrackDoneHooks? = nil, onFileWritten: (@Sendable (RecordedTrack) -> Void)? = nil,
                 stop: @escaping @Sendable (StopReason) -> Void) throws(AirtapError) {
        var stationLogger = logger
        stationLogger[metadataKey: "station"] = "\(station.id)"
        let sink: any StreamSink
        if let single = plan.singleFile {
            let path = URL(fileURLWithPath: single).standardizedFileURL.path
            let recorder = SingleFileRecorder(path: path, station: station, logger: stationLogger, maxBytes: plan.maxBytes,
                                              stop: stop)
            sink = recorder
            tracks = nil
            failure = { recorder.failure }
        } else {
            let template: FileNameTemplate
            do {
                template = try FileNameTemplate(plan.template ?? station.output ?? FileNameTemplate.standard.text)
            } catch {
                throw plan.template != nil ? .usage("--template: \(error)")
                    : .configuration("station '\(station.id)': output: \(error)")
            }
            var options = RecordingOptions(
                outputDirectory: plan.outputDirectory,
                template: template,
                writesTags: plan.writesTags,
                writesID3v1: plan.writesID3v1,
                minimumTrackSeconds: plan.minimumTrackSeconds,
                onTrackDone: plan.onTrackDone,
                maxBytes: plan.maxBytes)
            options.trackDoneHooks = trackDoneHooks
            options.onFileWritten = onFileWritten
            options.keepRule = try station.keepRule(overriding: plan.keepRule)
            options.measuresLoudness = plan.measuresLoudness
            options.library = plan.openLibrary
            let recorder = TrackRecorder(station: station, options: options, logger: stationLogger, stop: stop)
            tracks = recorder
            sink = recorder
            failure = { recorder.failure }
        }
        // The split aligner decodes around title changes: behind the queue, off the ingest thread.
        let aligned = alignsCuts ? try plan.aligned(sink, for: station, logger: stationLogger) : sink
        // In front of the aligner, on the same queue: the cuts are searched in the MP3 written.
        let fed = plan.transcode.map { MP3Transcoder($0, downstream: aligned, logger: stationLogger) } ?? aligned
        // Behind a batching loop, no delay of its own: the loop already hands over a batch at a
        // time, and a delay here cost a timer thread's wake-up per batch.
        writer = QueuedSink(fed, label: "record.\(station.id)", coalescing: coalescing, target: .global(qos: .utility),
                            batch: batch)
    }
}
