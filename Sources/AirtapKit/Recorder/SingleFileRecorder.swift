import FoundationEssentials
import ICYWire
import Logging
import Locking

/// `record --single FILE`: every frame into one file, and `FILE.cue` beside it with a TRACK per
/// title, rewritten atomically at each title change so it is right whenever the recording stops.
public final class SingleFileRecorder: StreamSink {
    private let core: Locked<Core>

    public init(path: String, station: Station, logger: Logger, stop: @escaping @Sendable (StopReason) -> Void) {
        core = Locked(Core(path: path, station: station, logger: logger, stop: stop))
    }

    public var cuePath: String { core.withLock { $0.cuePath } }

    /// The local I/O error that stopped the recording, if any (see `TrackRecorder.failure`).
    public var failure: AirtapError? { core.withLock { $0.failure } }

    public func receive(_ event: StreamEvent) throws {
        core.withLock { $0.handle(event) }
    }

    struct Core {
        let path: String
        let cuePath: String
        let station: Station
        let logger: Logger
        let stop: @Sendable (StopReason) -> Void
        var file: TrackFile?
        var cue: CueSheet
        var samplesWritten = 0
        var failure: AirtapError?

        init(path: String, station: Station, logger: Logger, stop: @escaping @Sendable (StopReason) -> Void) {
            self.path = path
            self.cuePath = path + ".cue"
            self.station = station
            self.logger = logger
            self.stop = stop
            cue = CueSheet(audioFileName: URL(fileURLWithPath: path).lastPathComponent, performer: nil,
                           title: station.name, sampleRate: 44100, tracks: [])
        }

        mutating func handle(_ event: StreamEvent) {
            guard failure == nil else { return }
            switch event {
            case .head, .discontinuity:
                break
            case .format(let header):
                if file == nil { cue.sampleRate = header.sampleRate }
            case .packet(let packet):
                append(packet)
            case .metadata(let change):
                // Before the first frame, or the first title of the recording: it names track 1 at 00:00:00.
                let start = cue.tracks.isEmpty ? 0 : samplesWritten
                cue.tracks.append(CueSheet.Track(performer: change.info.artist, title: change.info.title, startSample: start))
                writeCue()
            case .ended:
                finish()
            }
        }

        private mutating func append(_ packet: Packet) {
            do {
                if file == nil {
                    file = try TrackFile(partPath: path + ".part", first: packet, reservesTagSpace: false)
                    cue.sampleRate = packet.header.sampleRate
                }
                try file?.append(packet)
                samplesWritten += packet.sampleCount
            } catch {
                fail(error)
            }
        }

        private mutating func finish() {
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
