#if canImport(Glibc)
import Glibc
#endif
import AirtapStations
import AirtapSupport
import CurlSource
import Descriptors
import FoundationEssentials
import ICYWire
import Locking
import Logging

/// A station whose stream is local: a file, or standard input (`airtap record show.mp3`,
/// `curl -s URL | airtap record -`). The bytes go through the same `IngestPipeline` as a
/// network station's (the first bytes decide the container; titles come from ID3 tags and Ogg
/// comments), on the network loop's thread, to the same sinks.
///
/// A file is read a chunk per loop turn, as fast as the sinks take it (a lossless sink that
/// falls behind pauses the reading, as it pauses a transfer), or no faster than it plays when
/// `pacesFiles`. A pipe, a socket or a terminal is read as its data arrives: its descriptor
/// waits in the loop's epoll, like a D-Bus connection's.
package final class LocalStreamSession: StationSource, LoopDescriptorSource, @unchecked Sendable {
    // Why @unchecked Sendable is sound: every `var` below is touched only on the
    // loop thread (scheduled work and `LoopDescriptorSource` calls, which the loop makes on
    // its thread); what other threads read lives in `status`, behind its lock. `descriptor` is set
    // before the source is attached and not changed while it is.
    package let station: Station
    private let stream: LocalStream
    private let loop: CurlMultiLoop
    private let pacesFiles: Bool
    private let logger: Logger
    private let fanOut: FanOut
    private let congestion: SinkCongestion
    private let status = SourceStatus()

    private var phase = Phase.idle
    package private(set) var descriptor: Int32 = -1
    /// One read's room, reused.
    private var buffer = [UInt8](repeating: 0, count: LocalStreamSession.chunkBytes)

    /// One read: 64 KiB, a few seconds of audio; a file's next chunk waits for the next loop turn.
    static let chunkBytes = 64 * 1024
    /// Read without a single frame, a stream is not audio airtap can read (`/dev/zero`, a
    /// video): the session ends instead of reading on.
    static let maxBytesBeforeAudio = 4 << 20
    /// A paced file is read this far ahead of the time it plays, so a player's buffer stays full.
    static let paceLeadSeconds = 2.0

    /// What the stream is being read from, and what belongs to that reading alone.
    private struct Reading {
        let pipeline: IngestPipeline
        /// A pipe, socket or terminal: read when epoll says so. Else a file, read on loop turns.
        let waitsForData: Bool
        let since: ContinuousClock.Instant
        var bytesRead = 0
        var audioSeconds = 0.0
        /// Waiting for a congested sink, or for the pace.
        var isWaiting = false
    }

    private enum Phase {
        case idle
        case reading(Reading)
        case stopped(StopReason)
    }

    package init(station: Station, stream: LocalStream, loop: CurlMultiLoop, pacesFiles: Bool, sinks: [any StreamSink],
                 logger: Logger) {
        self.station = station
        self.stream = stream
        self.loop = loop
        self.pacesFiles = pacesFiles
        var logger = logger
        logger[metadataKey: "station"] = "\(station.id)"
        self.logger = logger
        self.fanOut = FanOut(sinks, logger: logger)
        self.congestion = SinkCongestion(sinks)
    }

    package var state: ConnectionState { status.connection }

    package func start() {
        loop.schedule(after: 0) { [self] in
            loop.assertOnLoopThread()
            guard case .idle = phase else { return }
            open()
        }
    }

    package func stop(_ reason: StopReason, after delay: Double) {
        loop.schedule(after: delay) { [self] in
            loop.assertOnLoopThread()
            finish(reason)
        }
    }

    package func stopped() async -> StopReason {
        await status.stopped()
    }

    // MARK: Loop thread

    private func open() {
        publish(.connecting(url: stream.url, attempt: 0))
        let opened: Int32
        switch stream {
        case .standardInput: opened = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0)
        case .file(let path):
            // Non-blocking: a FIFO's open would wait for a writer on the loop's thread, where
            // nothing else (--for, a signal's stop) could run. The loop waits for its data instead.
            opened = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
            // Reads stay blocking, as they are for standard input: they come when epoll says
            // there is data (a file is never waited for at all).
            if opened >= 0 { _ = fcntl(opened, F_SETFL, fcntl(opened, F_GETFL) & ~O_NONBLOCK) }
        }
        let admitted = DescriptorHeadroom.admit(opened)
        guard admitted >= 0 else { return finish(.error(.localIO("cannot read \(stream.displayName): \(errorText(errno))"))) }
        descriptor = admitted
        var status = stat()
        guard fstat(admitted, &status) == 0 else { return finish(.error(.localIO("cannot read \(stream.displayName): \(errorText(errno))"))) }
        let kind = status.st_mode & S_IFMT
        guard kind != S_IFDIR else { return finish(.error(.localIO("cannot read \(stream.displayName): it is a folder"))) }
        let isFile = kind == S_IFREG
        // A device other than a terminal (/dev/null, /dev/zero) never makes a read wait, and
        // epoll refuses it: it is read on loop turns, as a file is.
        let readsOnTurns = isFile || (kind == S_IFCHR && isatty(admitted) == 0)
        let pipeline = IngestPipeline(metaint: nil, titleDecoding: station.titleDecoding, logger: logger, container: .undecided)
        phase = .reading(Reading(pipeline: pipeline, waitsForData: !readsOnTurns, since: .now))
        publish(.streaming(url: stream.url))
        logger.info("reading", metadata: ["from": "\(stream.displayName)"])
        var head = StreamHead(response: ResponseHead(protocolName: "FILE", statusCode: 200, reason: "OK", fields: []), url: stream.url)
        // A file is a whole program: its first track starts at its start, and its end is the end.
        head.isWholeProgram = isFile
        fanOut.emit(.head(head))
        if readsOnTurns { readFile() } else { loop.attach(self) }
    }

    /// One chunk of a file, then the next on the next turn (other stations' work runs between).
    private func readFile() {
        guard readChunk() else { return }
        loop.schedule(after: 0) { [self] in readFile() }
    }

    /// Reads and hands on one chunk; false when the reading stopped or waits to be resumed.
    private func readChunk() -> Bool {
        guard case .reading(var reading) = phase, !reading.isWaiting else { return false }
        if congestion.isCongested, congestion.wait(on: loop, relieved: { [self] in goOn() }) {
            wait(&reading)
            return false
        }
        if pacesFiles, !reading.waitsForData {
            let ahead = reading.audioSeconds - (ContinuousClock.now - reading.since).seconds - Self.paceLeadSeconds
            if ahead > 0 {
                wait(&reading)
                loop.schedule(after: ahead) { [self] in goOn() }
                return false
            }
        }
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR || errno == EAGAIN { return true }
            finish(.error(.localIO("cannot read \(stream.displayName): \(errorText(errno))")))
            return false
        }
        guard count > 0 else {
            finishAtEnd(reading)
            return false
        }
        let pipeline = reading.pipeline
        var seconds = 0.0
        buffer.withUnsafeBytes { bytes in
            pipeline.consume(UnsafeRawBufferPointer(rebasing: bytes[..<count])) { event in
                if case .packet(let packet) = event { seconds += packet.duration }
                fanOut.emit(event)
            }
        }
        reading.bytesRead += count
        reading.audioSeconds += seconds
        phase = .reading(reading)
        if let format = pipeline.unsupportedFormat {
            finish(.error(.unsupportedFormat(url: stream.displayName, format: format.description)))
            return false
        }
        if pipeline.packetCount == 0, reading.bytesRead >= Self.maxBytesBeforeAudio {
            finish(.error(.stream(url: stream.displayName,
                                  reason: "no audio frames airtap can read in its first \(Self.maxBytesBeforeAudio >> 20) MiB")))
            return false
        }
        return true
    }

    private func wait(_ reading: inout Reading) {
        reading.isWaiting = true
        phase = .reading(reading)
    }

    /// The wait is over (a sink has room, or the pace lets the next chunk go).
    private func goOn() {
        loop.assertOnLoopThread()
        guard case .reading(var reading) = phase, reading.isWaiting else { return }
        reading.isWaiting = false
        phase = .reading(reading)
        // A pipe's next read comes with epoll's next word, asked for again from here.
        if !reading.waitsForData { readFile() }
    }

    private func finishAtEnd(_ reading: Reading) {
        reading.pipeline.finish { fanOut.emit($0) }
        guard reading.pipeline.packetCount > 0 else {
            let what = reading.bytesRead == 0 ? "it is empty" : "it holds no audio frames airtap can read"
            return finish(.error(.stream(url: stream.displayName, reason: what)), pipelineFinished: true)
        }
        finish(.endOfStream, pipelineFinished: true)
    }

    private func finish(_ reason: StopReason, pipelineFinished: Bool = false) {
        switch phase {
        case .stopped:
            return
        case .reading(let reading):
            phase = .stopped(reason)
            if !pipelineFinished { reading.pipeline.finish { fanOut.emit($0) } }
            // A file's descriptor is closed here; an attached one once the loop detaches it.
            if !reading.waitsForData { closeDescriptor() }
        case .idle:
            phase = .stopped(reason)
            closeDescriptor()
        }
        logger.info("stopped: \(reason)")
        fanOut.emit(.ended(reason))
        status.stop(reason)
    }

    private func closeDescriptor() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    private func publish(_ state: ConnectionState) {
        status.set(state)
        fanOut.emit(.connection(state))
    }

    // MARK: LoopDescriptorSource (a pipe, socket or terminal)

    package func interest() -> LoopInterest {
        switch phase {
        case .reading(let reading): reading.isWaiting ? .nothing : .readable
        case .idle, .stopped: .detach
        }
    }

    package func ready(events: UInt32) -> Bool {
        guard case .reading = phase else { return false }
        // EPOLLHUP with nothing left reads 0: the end. One read per wake-up: it cannot block.
        if events != 0 { _ = readChunk() }
        if case .reading = phase { return true }
        return false
    }

    package func detached() {
        // Attaching failed (a descriptor epoll cannot wait on), or the loop shut down.
        if case .reading = phase {
            finish(.error(.localIO("cannot wait for data on \(stream.displayName)")))
        }
        closeDescriptor()
    }
}
