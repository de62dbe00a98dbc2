#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import FoundationEssentials
import Locking
import Logging

/// The recorder's way into the library index: one per process, shared by every station it records.
///
/// A track's fingerprint comes with it, made from the samples its recorder decoded anyway;
/// only the index lookup and insert hold the lock. The index is
/// SQLite's, so other processes recording at the same time wait on its lock, not on this one.
package final class TrackLibrary: Sendable {
    private let index: Locked<LibraryIndex>
    /// The index file, for whatever else in the process reads it (`serve`'s recordings page).
    package let path: String
    /// Same audio as a track already in the library: not kept.
    package let dedupe: Bool
    private let logger: Logger
    /// The recording folders this process has put in the index's folder list already.
    private let knownFolders = Locked<Set<String>>([])
    /// Without dedupe nothing the recorder does waits on the index: a finished track's
    /// fingerprint and entry are made here, off its path, a batch to a commit (nil: at once).
    private let backlog: LibraryBacklog<PendingTrack>?
    /// Tracks waiting at most: a recorder that finds this many waits for room.
    static let backlogCapacity = 256

    struct PendingTrack: Sendable {
        let entry: LibraryEntry
        let recordingFolder: String
        /// The recorder decoded no fingerprint: it is read from the file.
        let readsFingerprint: Bool
    }

    package convenience init(index: sending LibraryIndex, dedupe: Bool, defersIndexing: Bool = false, logger: Logger) {
        self.init(index: Locked(index), dedupe: dedupe, defersIndexing: defersIndexing, logger: logger)
    }

    private init(index: Locked<LibraryIndex>, dedupe: Bool, defersIndexing: Bool, logger: Logger) {
        self.index = index
        self.path = index.withLock { $0.path }
        self.dedupe = dedupe
        self.logger = logger
        backlog = defersIndexing && !dedupe ? LibraryBacklog(capacity: Self.backlogCapacity) { [index, knownFolders, logger] batch in
            Self.index(batch, into: index, knownFolders: knownFolders, logger: logger)
        } : nil
    }

    /// The same index, adding every track at once: for what the user saves on purpose (`play`'s s key).
    package var indexingOnly: TrackLibrary {
        dedupe || backlog != nil ? TrackLibrary(index: index, dedupe: false, defersIndexing: false, logger: logger) : self
    }

    /// Returns once every track handed over so far is in the index: before the process exits.
    package func finishPending() {
        backlog?.drain()
    }

    /// The library a recording run adds to: `path` (`--library`) or the default one. A library
    /// the user asked for (`path`, or `dedupe`) that cannot be opened is an error; the default
    /// one is a warning, and the recording goes on without it. `defersIndexing`: without dedupe,
    /// tracks are indexed off the recorder's path (the job calls `finishPending` at its end).
    package static func open(path: String?, dedupe: Bool, defersIndexing: Bool = false, environment: [String: String],
                             logger: Logger) throws(AirtapError) -> TrackLibrary? {
        let required = path != nil || dedupe
        guard let chosen = path ?? LibraryIndex.defaultPath(environment: environment) else {
            if required { throw .configuration("--dedupe needs a library: set --library FILE, XDG_DATA_HOME or HOME") }
            return nil
        }
        do {
            return TrackLibrary(index: Locked(try LibraryIndex(path: chosen)), dedupe: dedupe, defersIndexing: defersIndexing,
                                logger: logger)
        } catch {
            if required { throw error.airtapError }
            logger.warning("\(error); recording without the library index")
            return nil
        }
    }

    /// What happens to a finished track.
    package enum Verdict: Sendable, Hashable {
        case keep
        /// The same recording is in the library at this path: remove the new file.
        case duplicate(of: String)
    }

    /// A track finished and kept: into the index, unless dedupe finds it there already. Any
    /// failure of the index (a full disk, a lock held too long) is one error line and the track
    /// is kept: the recording always goes on. `recordingFolder`: the folder the track was
    /// recorded into (`--out`); a partial copy the track replaces is removed only from there.
    package func trackFinished(_ track: RecordedTrack, stationID: String, stationName: String, recordingFolder: String) -> Verdict {
        var entry = LibraryEntry(path: track.path, stationID: stationID, stationName: stationName, title: track.info?.title,
                                 artist: track.info?.artist, startedAt: track.startedAt ?? Date(), seconds: track.seconds,
                                 codec: track.codec?.rawValue, bitrate: track.bitrate, isComplete: track.isComplete)
        // The loudness its ReplayGain tags were written from, when it was measured.
        if let replayGain = track.replayGain {
            entry.loudness = replayGain.integratedLoudness
            entry.gain = replayGain.trackGain
            entry.peak = replayGain.samplePeak
        }
        if let backlog {
            entry.fingerprint = track.fingerprint.flatMap { $0.values.isEmpty ? nil : $0 }
            backlog.submit(PendingTrack(entry: entry, recordingFolder: recordingFolder, readsFingerprint: track.fingerprint == nil))
            return .keep
        }
        // Always, not only with dedupe: a later `--dedupe` run compares with every earlier track.
        // From the samples the recorder decoded as it wrote the track; the file is read again
        // only for a recorder that had none (a codec with no decoder gives none either way).
        do {
            let fingerprint = try track.fingerprint ?? AudioFileFingerprint.read(path: track.path, wholeFile: false).fingerprint
            entry.fingerprint = fingerprint.values.isEmpty ? nil : fingerprint
        } catch {
            logger.error("library: no fingerprint for \(track.path): \(error)")
        }
        let outcome: LibraryIndex.Outcome
        do {
            // Only a partial track this recorder's folder holds is replaced: any other (a scanned
            // file, a row naming any path) keeps its entry and its file.
            let isNewFolder = knownFolders.withLock { $0.insert(recordingFolder).inserted }
            outcome = try index.withLock { index throws(LibraryError) in
                if isNewFolder { try index.addFolder(recordingFolder) }
                return try index.add(entry, dedupe: dedupe,
                              mayReplace: { RecordedPartialCopy(path: $0.path, recordingFolder: recordingFolder) != nil })
            }
        } catch {
            logger.error("\(error) (the track is kept, not indexed)")
            return .keep
        }
        switch outcome {
        case .added(let replaced):
            for earlier in replaced {
                if RecordedPartialCopy(path: earlier.path, recordingFolder: recordingFolder)?.remove() == true {
                    logger.notice("removed \(earlier.path): a partial copy of \(track.path)")
                }
            }
            return .keep
        case .duplicate(let earlier, let alignment):
            logger.notice("not kept: same audio as \(earlier.path)", metadata: [
                "file": "\(track.path)", "bit_errors": "\(Int((alignment.bitErrorRate * 100).rounded()))%",
            ])
            return .duplicate(of: earlier.path)
        }
    }

    /// A batch of tracks finished without dedupe: the fingerprints the recorder had none of, then
    /// one commit for all.
    private static func index(_ batch: [PendingTrack], into index: Locked<LibraryIndex>, knownFolders: Locked<Set<String>>,
                              logger: Logger) {
        var entries: [LibraryEntry] = []
        entries.reserveCapacity(batch.count)
        for pending in batch {
            var entry = pending.entry
            guard pending.readsFingerprint else {
                entries.append(entry)
                continue
            }
            do {
                let fingerprint = try AudioFileFingerprint.read(path: entry.path, wholeFile: false).fingerprint
                entry.fingerprint = fingerprint.values.isEmpty ? nil : fingerprint
            } catch {
                logger.error("library: no fingerprint for \(entry.path): \(error)")
            }
            entries.append(entry)
        }
        let newFolders = knownFolders.withLock { known in Set(batch.map(\.recordingFolder)).filter { known.insert($0).inserted } }
        do {
            try index.withLock { index throws(LibraryError) in
                for folder in newFolders.sorted() { try index.addFolder(folder) }
                try index.add(entries)
            }
        } catch {
            logger.error("\(error) (\(entries.count) track\(entries.count == 1 ? " is" : "s are") kept, not indexed)")
        }
    }
}
