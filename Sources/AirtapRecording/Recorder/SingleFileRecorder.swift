#if canImport(Glibc)
import Glibc
#endif
import AirtapIngest
import AirtapStations
import AirtapSupport
import FoundationEssentials
import ICYWire
import Locking
import Logging
import RecordingRules

/// `record --single FILE`: every frame into one file, and `FILE.cue` beside it with a TRACK per
/// title, rewritten atomically at each title change so it is right whenever the recording stops.
///
/// The name is chosen at the start: `FILE`, or `FILE (2)`… when an earlier run's audio, its cue
/// sheet or its leftover `.part` (a crash) is there, so none of those is ever touched.
package final class SingleFileRecorder: StreamSink {
    private let core: Locked<Core>

    /// `maxBytes`: `--max-size`; the file is complete and the recording stops once it has that much audio.
    /// `trackFloor`: a title sooner than this after the entry before it renames that entry.
    package init(path: String, station: Station, logger: Logger, maxBytes: Int? = nil, trackFloor: TrackFloor = .standard,
                stop: @escaping @Sendable (StopReason) -> Void) {
        core = Locked(Core(path: Self.unusedPath(path), station: station, logger: logger, maxBytes: maxBytes,
                           trackFloor: trackFloor, stop: stop))
    }

    /// Where the audio goes (`FILE`, or the numbered name chosen instead).
    package var path: String { core.withLock { $0.path } }
    package var cuePath: String { core.withLock { $0.cuePath } }

    /// The first of `path`, `path (2)`, … with no file, cue sheet or part file of that name.
    static func unusedPath(_ path: String) -> String {
        let url = URL(fileURLWithPath: path)
        let folder = url.deletingLastPathComponent().path
        let base = url.deletingPathExtension().lastPathComponent
        let ext = url.pathExtension.isEmpty ? "" : "." + url.pathExtension
        for number in 1...10_000 {
            let name: String = SafeFileName.numbered(base, number, maxBytes: max(200, base.utf8.count))
            let candidate: String = folder + "/" + name + ext
            let related: [String] = [candidate, candidate + ".part", candidate + ".cue"]
            if related.allSatisfy({ access($0, F_OK) != 0 }) { return candidate }
        }
        return path
    }

    /// The local I/O error that stopped the recording, if any (see `TrackRecorder.failure`).
    package var failure: AirtapError? { core.withLock { $0.failure } }

    package func receive(_ event: StreamEvent) throws {
        core.withLock { $0.handle(event) }
    }

    /// A write error here fails the recording, as it would at an append.
    package func batchEnded() {
        core.withLock { $0.writeAppends() }
    }

    struct Core {
        let path: String
        let cuePath: String
        let station: Station
        let logger: Logger
        let stop: @Sendable (StopReason) -> Void
        let maxBytes: Int?
        var file: TrackFile?
        var bytesWritten = 0
        /// Complete (the end, --max-size) or failed: later events change nothing.
        var isStopped = false
        var cue: CueSheet
        var samplesWritten = 0
        /// Where the last cue entry begins in the audio written: the floor trusts its samples only
        /// as far as its bytes carry them.
        var lastEntryStartByte = 0
        var failure: AirtapError?
        let trackFloor: TrackFloor
        /// The track floor's warning was given on this connection.
        var warnedOfShortTracks = false

        init(path: String, station: Station, logger: Logger, maxBytes: Int?, trackFloor: TrackFloor,
             stop: @escaping @Sendable (StopReason) -> Void) {
            self.path = path
            self.maxBytes = maxBytes
            self.trackFloor = trackFloor
            self.cuePath = path + ".cue"
            self.station = station
            self.logger = logger
            self.stop = stop
            cue = CueSheet(audioFileName: URL(fileURLWithPath: path).lastPathComponent, performer: nil,
                           title: station.name, sampleRate: 44100, tracks: [])
        }

        mutating func handle(_ event: StreamEvent) {
            guard !isStopped else { return }
            switch event {
            case .discontinuity:
                warnedOfShortTracks = false
            case .head, .connection:
                break
            case .format(let header):
                if file == nil {
                    cue.sampleRate = header.sampleRate
                    cue.fileType = CueSheet.FileType(header.codec)
                }
            case .packet(let packet):
                append(packet)
            case .metadata(let change):
                logger.info("title: \(change.info.raw)", metadata: ["position": "\(change.position)"])
                // Before the first frame, or the first title of the recording: it names track 1 at 00:00:00.
                let start = cue.tracks.isEmpty ? 0 : samplesWritten
                let track = CueSheet.Track(performer: change.info.artist, title: change.info.title, startSample: start)
                // The first entry is exempt from the floor: its start is when the recording began.
                if cue.tracks.count >= 2, let last = cue.tracks.last, cue.sampleRate > 0,
                   !trackFloor.allowsCut(after: Double(samplesWritten - last.startSample) / Double(cue.sampleRate),
                                         bytes: bytesWritten - lastEntryStartByte) {
                    if !warnedOfShortTracks {
                        warnedOfShortTracks = true
                        logger.warning("\(trackFloor.warning)", metadata: ["position": "\(change.position)"])
                    }
                    // Renamed in memory only: the sheet is rewritten at the next entry or the end,
                    // so a flood of titles costs no rewrite each.
                    cue.tracks[cue.tracks.count - 1] = CueSheet.Track(performer: track.performer, title: track.title,
                                                                      startSample: last.startSample)
                } else {
                    cue.tracks.append(track)
                    lastEntryStartByte = cue.tracks.count == 1 ? 0 : bytesWritten
                    writeCue()
                }
            case .ended:
                finish()
            }
        }

        mutating func writeAppends() {
            guard !isStopped else { return }
            do throws(AirtapError) {
                try file?.writeAppends()
            } catch {
                fail(error)
            }
        }

        private mutating func append(_ packet: Packet) {
            do throws(AirtapError) {
                if file == nil {
                    guard let created = try TrackFile(partPath: path + ".part", first: packet, reservesTagSpace: false) else {
                        throw AirtapError.localIO("cannot create \(path).part: \(errorText(EEXIST))")
                    }
                    file = created
                    cue.sampleRate = packet.header.sampleRate
                }
                try file?.append(packet)
                samplesWritten += packet.sampleCount
                bytesWritten += packet.bytes.count
            } catch {
                fail(error)
                return
            }
            if let maxBytes, bytesWritten >= maxBytes {
                logger.notice("reached --max-size (\(maxBytes) bytes)")
                finish()
                stop(.limitReached)
            }
        }

        private mutating func finish() {
            isStopped = true
            guard let file else { return }
            self.file = nil
            do {
                try file.complete(tag: nil, id3v1: false)
                let final = try moveWithoutOverwriting(file.partPath, to: path)
                if final != path {
                    // The audio went to "name (2).mp3": the cue sheet must name that file.
                    cue.audioFileName = URL(fileURLWithPath: final).lastPathComponent
                    try? FileManager.default.removeItem(atPath: cuePath)
                    writeCue(to: final + ".cue")
                } else {
                    writeCue()
                }
                logger.info("saved recording", metadata: ["file": "\(final)", "tracks": "\(cue.tracks.count)"])
            } catch {
                self.file = file
                fail(error)
            }
        }

        private mutating func writeCue(to target: String? = nil) {
            let target = target ?? cuePath
            do {
                try Data(cue.render().utf8).write(to: URL(fileURLWithPath: target), options: .atomic)
            } catch {
                fail(.localIO("cannot write \(target): \(describeSystemError(error))"))
            }
        }

        private mutating func fail(_ error: AirtapError) {
            logger.error("\(error)")
            failure = error
            isStopped = true
            // What was written stays, under its final name: the audio up to the failure is whole frames.
            if let file {
                self.file = nil
                file.abandon()
                _ = try? moveWithoutOverwriting(file.partPath, to: path)
            }
            stop(.error(error))
        }
    }
}
