import CurlSource
import Foundation
import ICYWire
import Logging
import Synchronization

/// How airtap asks for streams: the parts of a request that are not the URL.
public struct IngestOptions: Sendable, Hashable {
    public var userAgent: String
    public var headers: [String]
    public var proxy: String?
    public var insecure: Bool
    public var connectTimeout: Double
    public var stallTimeout: Double

    public init(userAgent: String = AirtapVersion.userAgent, headers: [String] = [], proxy: String? = nil,
                insecure: Bool = false, connectTimeout: Double = 10, stallTimeout: Double = 15) {
        self.userAgent = userAgent
        self.headers = headers
        self.proxy = proxy
        self.insecure = insecure
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
    }
}

/// What other threads may read about a session.
public enum ConnectionState: Sendable, Hashable {
    case idle
    case connecting(url: String)
    case streaming(url: String)
    case stopped(StopReason)
}

/// One station's connection: resolves playlists, tries fallback URLs in order, runs the
/// ingest pipeline and fans its events out to the sinks.
public final class StationSession: TransferDelegate, @unchecked Sendable {
    // Why @unchecked Sendable is sound: `phase`, `candidates`, `lastError` and `fanOut` are
    // touched only on the loop thread (curl callbacks and work posted with `loop.schedule`);
    // what other threads read lives in the `shared` Mutex.
    public let station: Station
    private let loop: CurlMultiLoop
    private let options: IngestOptions
    private let logger: Logger
    private let fanOut: FanOut

    private var phase = Phase.idle
    private var candidates: [Candidate] = []
    private var lastError: AirtapError?

    private let shared = Mutex(Shared())

    private struct Shared {
        var state = ConnectionState.idle
        var waiters: [CheckedContinuation<StopReason, Never>] = []
    }

    private struct Candidate {
        let url: String
        /// How many playlists deep this URL came from; playlists pointing at playlists stop at 3.
        let playlistDepth: Int
    }

    /// The single state of the connection, with what each state owns.
    private enum Phase {
        case idle
        case requesting(TransferID, Candidate)
        case readingPlaylist(TransferID, Candidate, format: PlaylistFormat?, body: [UInt8])
        case streaming(TransferID, Candidate, IngestPipeline)
        case stopped(StopReason)
    }

    /// Playlists are small; anything larger is not a playlist.
    private static let maxPlaylistBytes = 256 * 1024

    public init(station: Station, loop: CurlMultiLoop, options: IngestOptions, sinks: [any StreamSink], logger: Logger) {
        self.station = station
        self.loop = loop
        self.options = options
        var logger = logger
        logger[metadataKey: "station"] = "\(station.id)"
        self.logger = logger
        self.fanOut = FanOut(sinks, logger: logger)
    }

    public var state: ConnectionState { shared.withLock { $0.state } }

    public func start() {
        loop.schedule(after: 0) { [self] in
            guard case .idle = phase else { return }
            candidates = station.urls.map { Candidate(url: $0, playlistDepth: 0) }
            connectToNextCandidate()
        }
    }

    /// Stops the session (from any thread); sinks get the last frame, any title left, then `.ended(reason)`.
    public func stop(_ reason: StopReason = .userRequest, after delay: Double = 0) {
        loop.schedule(after: delay) { [self] in finish(reason) }
    }

    /// Returns once the session has stopped, with the reason.
    public func stopped() async -> StopReason {
        await withCheckedContinuation { continuation in
            let reason = shared.withLock { shared -> StopReason? in
                if case .stopped(let reason) = shared.state { return reason }
                shared.waiters.append(continuation)
                return nil
            }
            if let reason { continuation.resume(returning: reason) }
        }
    }

    // MARK: Loop thread

    private func connectToNextCandidate() {
        guard !candidates.isEmpty else {
            finish(.error(lastError ?? .stream(url: station.urls.first ?? station.id, reason: "no URL to try")))
            return
        }
        let candidate = candidates.removeFirst()
        let transferOptions = TransferOptions(
            url: candidate.url, userAgent: options.userAgent, headers: options.headers, proxy: options.proxy,
            insecure: options.insecure, connectTimeout: options.connectTimeout, stallTimeout: options.stallTimeout)
        let id = loop.start(transferOptions, delegate: self)
        phase = .requesting(id, candidate)
        publish(.connecting(url: candidate.url))
        logger.info("connecting", metadata: ["url": "\(candidate.url)"])
    }

    public func transfer(_ id: TransferID, didReceiveHead raw: TransferHead) -> Bool {
        guard case .requesting(let current, let candidate) = phase, current == id else { return false }
        let url = raw.effectiveURL.isEmpty ? candidate.url : raw.effectiveURL
        let head: ResponseHead
        do {
            head = try ResponseHead.parse(statusLine: raw.statusLine, headerLines: raw.headerLines)
        } catch {
            lastError = .stream(url: url, reason: "malformed response: \(raw.statusLine)")
            return false
        }
        guard (200..<300).contains(head.statusCode) else {
            lastError = .httpStatus(url: url, status: head.statusCode, reason: head.reason, contentType: head.contentType)
            return false
        }
        switch head.payload {
        case .playlist(let format):
            phase = .readingPlaylist(id, candidate, format: format, body: [])
            return true
        case .other(let contentType):
            // A playlist from a plain web server often comes as text/plain: trust the URL then.
            if let format = Playlist.format(forURL: url) {
                phase = .readingPlaylist(id, candidate, format: format, body: [])
                return true
            }
            lastError = .notAudio(url: url, status: head.statusCode, contentType: contentType)
            return false
        case .audio:
            let metaint: Int?
            switch head.metaint {
            case .interval(let interval): metaint = interval
            case .absent: metaint = nil
            case .invalid(let value):
                logger.warning("ignoring invalid icy-metaint '\(value)': recording without titles")
                metaint = nil
            }
            let pipeline = IngestPipeline(metaint: metaint, charset: station.titleCharset, logger: logger)
            phase = .streaming(id, candidate, pipeline)
            publish(.streaming(url: url))
            logger.info("streaming", metadata: ["url": "\(url)", "status": "\(head.statusCode)"])
            fanOut.emit(.head(StreamHead(response: head, url: url)))
            return true
        }
    }

    public func transfer(_ id: TransferID, didReceive bytes: UnsafeRawBufferPointer) -> Bool {
        switch phase {
        case .streaming(let current, _, let pipeline) where current == id:
            pipeline.consume(bytes) { fanOut.emit($0) }
            return true
        case .readingPlaylist(let current, let candidate, let format, var body) where current == id:
            guard body.count + bytes.count <= Self.maxPlaylistBytes else {
                lastError = .playlist(url: candidate.url, reason: "larger than \(Self.maxPlaylistBytes / 1024) KiB")
                return false
            }
            phase = .idle  // hand the buffer over uniquely, so the append does not copy it
            body.append(contentsOf: bytes)
            phase = .readingPlaylist(id, candidate, format: format, body: body)
            return true
        default:
            return false
        }
    }

    public func transfer(_ id: TransferID, didCompleteWith end: TransferEnd) {
        switch phase {
        case .requesting(let current, let candidate) where current == id:
            if case .failed(let error) = end { lastError = .network(url: candidate.url, reason: error.message) }
            if lastError == nil { lastError = .stream(url: candidate.url, reason: "the server sent nothing") }
            connectToNextCandidate()
        case .readingPlaylist(let current, let candidate, let format, let body) where current == id:
            if case .failed(let error) = end {
                lastError = .network(url: candidate.url, reason: error.message)
            } else if end == .finished {
                expandPlaylist(body, format: format, from: candidate)
            }
            connectToNextCandidate()
        case .streaming(let current, let candidate, let pipeline) where current == id:
            if pipeline.packetCount == 0 {
                pipeline.finish { fanOut.emit($0) }
                lastError = .stream(url: candidate.url, reason: Self.describeEmptyStream(end))
                connectToNextCandidate()
                return
            }
            switch end {
            case .finished, .aborted: finish(.endOfStream)
            case .failed(let error): finish(.error(.network(url: candidate.url, reason: error.message)))
            }
        default:
            break
        }
    }

    private static func describeEmptyStream(_ end: TransferEnd) -> String {
        if case .failed(let error) = end { return "connection lost before any audio: \(error.message)" }
        return "the server sent no audio frames"
    }

    private func expandPlaylist(_ body: [UInt8], format: PlaylistFormat?, from candidate: Candidate) {
        guard candidate.playlistDepth < 3 else {
            lastError = .playlist(url: candidate.url, reason: "playlists nested too deep")
            return
        }
        do {
            let text = TextDecoding.decode(body, fallback: .cp1252)
            let entries = try Playlist.entries(in: text, format: format, baseURL: candidate.url)
            logger.info("playlist resolved", metadata: ["url": "\(candidate.url)", "entries": "\(entries.count)"])
            let resolved = entries.map { Candidate(url: $0, playlistDepth: candidate.playlistDepth + 1) }
            candidates.insert(contentsOf: resolved, at: 0)
        } catch {
            let reason = switch error {
            case .hlsNotSupported: "HLS (segmented) streams are not supported"
            case .noEntries: "no stream URLs in it"
            }
            lastError = .playlist(url: candidate.url, reason: reason)
        }
    }

    private func finish(_ reason: StopReason) {
        switch phase {
        case .stopped:
            return
        case .streaming(let id, _, let pipeline):
            phase = .stopped(reason)
            loop.cancel(id)
            pipeline.finish { fanOut.emit($0) }
        case .requesting(let id, _), .readingPlaylist(let id, _, _, _):
            phase = .stopped(reason)
            loop.cancel(id)
        case .idle:
            phase = .stopped(reason)
        }
        logger.info("stopped: \(reason)")
        fanOut.emit(.ended(reason))
        let waiters = shared.withLock { shared in
            shared.state = .stopped(reason)
            defer { shared.waiters.removeAll() }
            return shared.waiters
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }

    private func publish(_ state: ConnectionState) {
        shared.withLock { $0.state = state }
    }
}
