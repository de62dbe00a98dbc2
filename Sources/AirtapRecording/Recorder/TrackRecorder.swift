#if canImport(Glibc)
import Glibc
#endif
import AirtapIngest
import AirtapStations
import AirtapSupport
import AudioFingerprinting
import FoundationEssentials
import ICYWire
import ID3Tagging
import Locking
import Logging
import RecordingRules

/// How `airtap record` writes tracks.
package struct RecordingOptions: Sendable {
    /// Absolute path of the output folder; nothing is ever written outside it.
    package var outputDirectory: String
    package var template: FileNameTemplate
    package var writesTags: Bool
    package var writesID3v1: Bool
    /// Complete tracks shorter than this (jingles, ads) go to `incomplete/` too.
    package var minimumTrackSeconds: Double?
    /// Run after each complete track with the file's path as `$1` (at most a few at once).
    package var onTrackDone: String?
    /// Runs `onTrackDone` for the recorders that share it (a process recording many stations
    /// shares one, so the bound is per process); nil: each recorder runs its own.
    package var trackDoneHooks: TrackDoneHooks?
    /// The station stops (as a limit) once its files reach this many bytes.
    package var maxBytes: Int?
    /// Told of every file saved, complete or not (`--json`'s `file` events); runs on the
    /// recorder's queue under its lock, so it must only hand the news on.
    package var onFileWritten: (@Sendable (RecordedTrack) -> Void)?
    /// A title change sooner than this after its track began names that track instead of ending it.
    package var trackFloor = TrackFloor.standard
    /// How many tracks may start per minute of wall-clock time, however fast the station sends;
    /// nil: no bound (tests that feed hundreds of titles at once).
    package var trackStarts: TrackStartBudget? = .standard
    /// The monotonic clock `trackStarts` is counted by (tests freeze it).
    package var monotonicNow: @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    /// Which finished tracks stay (`--keep-only`, `--skip`); the others leave no file.
    package var keepRule = KeepRule()
    /// Kept tracks get ReplayGain tags from their measured loudness (with `writesTags`).
    package var measuresLoudness = false
    /// The library index each kept track joins (and, with dedupe, may be refused by).
    package var library: TrackLibrary?

    package init(outputDirectory: String, template: FileNameTemplate = .standard, writesTags: Bool = true,
                writesID3v1: Bool = false, minimumTrackSeconds: Double? = nil, onTrackDone: String? = nil, maxBytes: Int? = nil) {
        self.outputDirectory = outputDirectory
        self.template = template
        self.writesTags = writesTags
        self.writesID3v1 = writesID3v1
        self.minimumTrackSeconds = minimumTrackSeconds
        self.onTrackDone = onTrackDone
        self.maxBytes = maxBytes
    }
}

/// What a status line shows about one station's recording.
package struct RecorderStatus: Sendable, Hashable {
    package var title: String?
    package var trackSeconds: Double = 0
    package var bytesWritten = 0
    package var filesWritten = 0

    package init() {}
}

/// Cuts a station's packets into one file per title: `.part` while growing, renamed when done.
///
/// The first track of a connection is partial (it started before we tuned in), and so is the
/// track the stop cuts short: both go to `incomplete/` in the station's folder, whole. A title
/// change closes the file exactly between the packets before it and after it, so the frames of
/// all files, in order, are the frames the station sent.
///
/// Runs behind a lossless `QueuedSink`: file I/O never happens on the ingest thread.
package final class TrackRecorder: StreamSink, HeldBackAudioSink {
    private let core: Locked<RecorderCore>
    private let status = Locked(RecorderStatus())

    /// - Parameters:
    ///   - stop: called (once) when the recording must end: `--max-size` reached, or a local I/O error.
    package init(station: Station, options: RecordingOptions, logger: Logger,
                stop: @escaping @Sendable (StopReason) -> Void) {
        core = Locked(RecorderCore(station: station, options: options, logger: logger, stop: stop))
    }

    package var currentStatus: RecorderStatus { status.withLock { $0 } }

    /// For a recorder that starts exactly at a title change (the player's "save this song"):
    /// its first track is whole, not the partial first track of a connection. Call before any event.
    package func startsAtTrackBoundary() {
        core.withLock { $0.startsAtTrackBoundary() }
    }

    /// The local I/O error that stopped the recording, if any: it may come after the stream
    /// ended (the writer runs behind a queue), so the command checks it once the queue is drained.
    package var failure: AirtapError? { core.withLock { $0.failure } }

    package var heldBackAudio: (any HeldBackAudioSink)? { self }

    /// Audio the split search still holds back: written past the end of the track in progress,
    /// so that a kill loses none of it (see `HeldBackAudioSink`).
    package func holdBack(_ packets: [Packet]) {
        core.withLock { $0.holdBack(packets) }
    }

    /// A write error here fails the recording, as it would at an append: the audio it held is
    /// not on disk.
    package func batchEnded() {
        core.withLock { $0.writeAppends() }
    }

    package func receive(_ event: StreamEvent) throws {
        let snapshot = core.withLock { core in
            core.handle(event)
            return core.status
        }
        status.withLock { $0 = snapshot }
    }
}
