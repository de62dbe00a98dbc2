#if canImport(Glibc)
import Glibc
#endif
import AirtapCuts
import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import FoundationEssentials
import Logging
import Synchronization
import SystemPackage

/// `relay --to FILE|-`: the stream's audio frames (no ICY metadata, no ID3 tags) to one file with
/// a cue sheet beside it, or to standard output for a player or encoder reading a pipe.
package enum FileRelay {
    package enum Target: Sendable, Hashable {
        case file(path: String)
        case standardOutput
    }

    /// Packets allowed to wait for a slow pipe reader before newer ones are dropped: about
    /// 50 s of audio, far more than a player's pause-free jitter, and still bounded memory.
    static let stdoutBacklogPackets = 2000
    /// The same, in seconds of 44.1 kHz MP3 (for messages).
    package static let stdoutBacklogSeconds = stdoutBacklogPackets * 1152 / 44100

    /// The sink for `target`, behind its own queue: a slow disk or reader never holds up ingest.
    /// `stop` ends the session: `.userRequest` when the pipe's reader went away (quietly, exit 0),
    /// `.error` when the file or pipe cannot be written.
    /// `journal`: where the station's title delay is learned and kept, for the cue sheet's cuts.
    /// `transcode`: the frames are MP3 re-encoded from what the station sends, on the same queue.
    package static func makeSink(_ target: Target, station: Station, journal: TitleDelayJournal? = nil, transcode: TranscodeSetting? = nil,
                                logger: Logger, stop: @escaping @Sendable (StopReason) -> Void) -> QueuedSink {
        func fed(_ sink: any StreamSink) -> any StreamSink {
            transcode.map { MP3Transcoder($0, downstream: sink, logger: logger) } ?? sink
        }
        switch target {
        case .file(let path):
            // The same file and cue sheet as `record --single`, with the same split search: each
            // INDEX sits in the silence near the title (the station's splitOffsetMs applied),
            // not where the title arrived.
            let path = URL(fileURLWithPath: path).standardizedFileURL.path
            let recorder = SingleFileRecorder(path: path, station: station, logger: logger, stop: stop)
            var options = SplitOptions.standard
            options.offset = station.splitOffset ?? 0
            options.titleDelay = station.titleDelay ?? .auto
            return QueuedSink(fed(SplitAligner(recorder, options: options, logger: logger, journal: journal)), label: "relay.file")
        case .standardOutput:
            return QueuedSink(fed(PipeWriter(fileDescriptor: STDOUT_FILENO, stop: stop)), label: "relay.stdout",
                              policy: .dropPackets(beyond: stdoutBacklogPackets))
        }
    }
}

/// Writes each packet's bytes to a file descriptor (a pipe, usually). A reader that closed its
/// end (EPIPE) ends the relay quietly; SIGPIPE must be ignored by the process for that to be
/// an error code rather than death.
final class PipeWriter: StreamSink {
    private let fileDescriptor: Int32
    private let stop: @Sendable (StopReason) -> Void
    /// Set once writing has ended, so nothing more is attempted (and nothing logged twice).
    private let isStopped = Atomic<Bool>(false)

    package init(fileDescriptor: Int32, stop: @escaping @Sendable (StopReason) -> Void) {
        self.fileDescriptor = fileDescriptor
        self.stop = stop
    }

    package func receive(_ event: StreamEvent) throws {
        guard case .packet(let packet) = event, !isStopped.load(ordering: .relaxed) else { return }
        let failure = packet.bytes.withUnsafeBytes { writeAll($0) }
        guard let failure else { return }
        isStopped.store(true, ordering: .relaxed)
        if failure == EPIPE {
            stop(.userRequest)
        } else {
            stop(.error(.localIO("cannot write to the output: \(errorText(failure))")))
        }
    }

    /// nil when everything was written, else the errno.
    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        do {
            try FileDescriptor(rawValue: fileDescriptor).writeAll(bytes)
            return nil
        } catch {
            return (error as? Errno)?.rawValue ?? EIO
        }
    }
}
