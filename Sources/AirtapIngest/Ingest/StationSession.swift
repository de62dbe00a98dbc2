import AirtapStations
import AirtapSupport
import CurlSource
import FoundationEssentials
import ICYWire
import Locking
import Logging

/// One station's connection: resolves playlists, tries fallback URLs in order, runs the
/// ingest pipeline and fans its events out to the sinks; after a drop, reconnects by its
/// policy and splices the new connection onto the old one when the server's burst overlaps.
/// An answer that is a segmented stream's playlist is handed to `segmentedStreams`, which then
/// fetches the stream's parts into its own pipeline; the session follows it as it follows a body.
package final class StationSession: StationSource, TransferDelegate, @unchecked Sendable {
    // Why @unchecked Sendable is sound: every `var` below (and `fanOut`) is
    // touched only on the loop thread (curl callbacks and work posted with `loop.schedule`), and
    // so is `segmentedStreams`, whose state only its `follow` and the feeds' callbacks change;
    // what other threads read lives in `status`, behind its lock.
    package let station: Station
    private let loop: CurlMultiLoop
    private let options: IngestOptions
    private let logger: Logger
    private let fanOut: FanOut
    /// Sinks that may ask for the transfer to wait (lossless queues in front of disks).
    private let congestion: SinkCongestion

    private var phase = Phase.idle
    /// This round's URLs still to try, and why the last one failed.
    private var round = Round()
    /// What the connections so far tell the next retry.
    private var history = RetryHistory()
    /// One stream out of many connections: repeated frames dropped, positions contiguous.
    private var splice = StreamSplice()
    /// What the next connection's pipeline inherits: the title (the same title again is no change).
    private var lastRawTitle: String?
    /// What follows an answer that is a segmented stream.
    private let segmentedStreams: any StreamFollowing

    private let status = SourceStatus()

    /// The first playlist may be a segmented stream's, as long as `segmentedStreams` reads.
    private var maxPlaylistBytes: Int { segmentedStreams.maxPlaylistBytes }

    init(station: Station, loop: CurlMultiLoop, options: IngestOptions, sinks: [any StreamSink], logger: Logger,
         following segmentedStreams: any StreamFollowing) {
        self.station = station
        self.segmentedStreams = segmentedStreams
        self.loop = loop
        self.options = options
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
            startRound()
        }
    }

    /// Stops the session (from any thread); sinks get the last frame, any title left, then `.ended(reason)`.
    package func stop(_ reason: StopReason, after delay: Double) {
        loop.schedule(after: delay) { [self] in
            loop.assertOnLoopThread()
            finish(reason)
        }
    }

    /// Returns once the session has stopped, with the reason.
    package func stopped() async -> StopReason {
        await status.stopped()
    }

    // MARK: Loop thread

    /// Tries the station's URLs from the first, afresh.
    private func startRound() {
        round = Round(candidates: CandidateList(urls: station.urls))
        connectToNextCandidate()
    }

    private func connectToNextCandidate() {
        let stationURL = station.urls.first.map(URLCredentials.redacted) ?? station.id
        let candidate: Candidate
        switch round.candidates.next() {
        case .connect(let next):
            candidate = next
        case .playlistEntriesExhausted:
            round.lastError = .playlist(url: stationURL,
                                        reason: "its playlists list more stream URLs than airtap tries (\(CandidateList.maxPlaylistEntriesPerRound)); none of those tried worked")
            fallthrough
        case .exhausted:
            let error = round.lastError ?? .stream(url: stationURL, reason: "no URL to try")
            retryOrFinish(after: error, failure: history.failureKind(of: error))
            return
        }
        let transferOptions = TransferOptions(
            url: candidate.url, credentials: candidate.credentials, userAgent: options.userAgent, headers: options.headers, proxy: options.proxy,
            insecure: options.insecure, connectTimeout: options.connectTimeout, stallTimeout: options.stallTimeout)
        let id = loop.start(transferOptions, delegate: self)
        phase = .requesting(id, candidate)
        publish(.connecting(url: candidate.url, attempt: history.progress.attempt))
        logger.info("connecting", metadata: ["url": "\(candidate.url)"])
    }

    package func transfer(_ id: TransferID, didReceiveHead raw: TransferHead) -> Bool {
        loop.assertOnLoopThread()
        guard case .requesting(let current, let candidate) = phase, current == id else { return false }
        let url = raw.effectiveURL.isEmpty ? candidate.url : raw.effectiveURL
        switch Self.classify(raw, url: url) {
        case .failed(let error):
            round.lastError = error
            return false
        case .playlist(let format):
            phase = .readingPlaylist(id, candidate, url: url, format: format, body: [])
            return true
        case .audio(let head, let container):
            let metaint: Int?
            switch head.metaint {
            case .interval(let interval): metaint = interval
            case .absent: metaint = nil
            case .invalid(let value):
                logger.warning("ignoring invalid icy-metaint '\(value)': recording without titles")
                metaint = nil
            }
            let pipeline = IngestPipeline(metaint: metaint, titleDecoding: station.titleDecoding, logger: logger,
                                          lastRawTitle: lastRawTitle, container: container)
            phase = .streaming(Streaming(transfer: id, candidate: candidate, pipeline: pipeline, head: head, since: .now))
            splice.connectionStarted()
            publish(.streaming(url: url))
            logger.info("streaming", metadata: ["url": "\(url)", "status": "\(head.statusCode)"])
            fanOut.emit(.head(StreamHead(response: head, url: url)))
            return true
        }
    }

    package func transfer(_ id: TransferID, didReceive bytes: UnsafeRawBufferPointer) -> ReceiveDecision {
        loop.assertOnLoopThread()
        switch phase {
        case .streaming(let streaming) where streaming.transfer == id:
            let pipeline = streaming.pipeline
            // A source faster than the disk (a fast server, a burst): wait for the writer.
            let waits = congestion.isCongested && congestion.wait(on: loop) { [self] in
                guard case .streaming(var streaming) = phase, streaming.transfer == id, streaming.isPaused else { return }
                streaming.isPaused = false
                phase = .streaming(streaming)
                loop.resume(id)
            }
            if waits {
                var paused = streaming
                paused.isPaused = true
                phase = .streaming(paused)
                return .pause
            }
            pipeline.consume(bytes) { deliver($0) }
            if let format = pipeline.unsupportedFormat {
                round.lastError = .unsupportedFormat(url: streaming.candidate.url, format: format.description)
                return .abort
            }
            return .accepted
        case .readingPlaylist(let current, let candidate, let url, let format, var body) where current == id:
            guard body.count + bytes.count <= maxPlaylistBytes else {
                round.lastError = .playlist(url: candidate.url, reason: "larger than \(maxPlaylistBytes >> 20) MiB")
                return .abort
            }
            phase = .idle  // hand the buffer over uniquely, so the append does not copy it
            body.append(contentsOf: bytes)
            phase = .readingPlaylist(id, candidate, url: url, format: format, body: body)
            return .accepted
        default:
            return .abort
        }
    }

    package func transfer(_ id: TransferID, didCompleteWith end: TransferEnd) {
        loop.assertOnLoopThread()
        if case .failed(let error) = end, error.kind == .descriptorsExhausted, isCurrent(id) {
            finishOutOfDescriptors()
            return
        }
        switch phase {
        case .requesting(let current, let candidate) where current == id:
            if case .failed(let error) = end { round.lastError = .network(url: candidate.url, reason: error.message) }
            if round.lastError == nil { round.lastError = .stream(url: candidate.url, reason: "the server sent nothing") }
            connectToNextCandidate()
        case .readingPlaylist(let current, let candidate, let url, let format, let body) where current == id:
            if case .failed(let error) = end {
                round.lastError = .network(url: candidate.url, reason: error.message)
            } else if end == .finished, expandPlaylist(body, format: format, from: candidate, at: url) == .followingStream {
                return
            }
            connectToNextCandidate()
        case .streaming(let streaming) where streaming.transfer == id:
            let (candidate, pipeline) = (streaming.candidate, streaming.pipeline)
            pipeline.finish { deliver($0) }
            lastRawTitle = pipeline.lastRawTitle
            if pipeline.unsupportedFormat != nil, let error = round.lastError {
                retryOrFinish(after: error, failure: .clientError)
                return
            }
            if pipeline.packetCount == 0 {
                round.lastError = .stream(url: candidate.url, reason: Self.describeEmptyStream(end, head: streaming.head))
                connectToNextCandidate()
                return
            }
            history.hasStreamed = true
            let streamed = (ContinuousClock.now - streaming.since).seconds
            switch end {
            case .finished, .aborted:
                retryOrFinish(after: nil, failure: .transient, streamedFor: streamed, lost: "the server ended the stream")
            case .failed(let error):
                retryOrFinish(after: .network(url: candidate.url, reason: error.message), failure: .transient,
                              streamedFor: streamed, lost: error.message)
            }
        default:
            break
        }
    }

    private func isCurrent(_ id: TransferID) -> Bool {
        switch phase {
        case .requesting(let current, _), .readingPlaylist(let current, _, _, _, _): current == id
        case .streaming(let streaming): streaming.transfer == id
        case .idle, .reconnecting, .stopped, .following: false
        }
    }

    private enum Expansion { case candidatesAdded, followingStream }

    @discardableResult
    private func expandPlaylist(_ body: [UInt8], format: PlaylistFormat?, from candidate: Candidate, at url: String) -> Expansion {
        guard candidate.mayExpand else {
            round.lastError = .playlist(url: candidate.url, reason: "playlists nested too deep")
            return .candidatesAdded
        }
        do {
            let text = TextDecoding.decode(body, fallback: .cp1252)
            // Relative entries resolve where the playlist finally came from, as a browser's would.
            let entries = try Playlist.entries(in: text, format: format, baseURL: url)
            logger.info("playlist resolved", metadata: ["url": "\(candidate.url)", "entries": "\(entries.count)"])
            let taken = round.candidates.insert(entries: entries, from: candidate)
            if entries.count > taken {
                logger.info("playlist lists \(entries.count) URLs; trying the first \(taken)", metadata: ["url": "\(candidate.url)"])
            }
        } catch {
            switch error {
            case .isSegmentedStream:
                follow(body, from: candidate, at: url)
                return .followingStream
            case .noEntries:
                round.lastError = .playlist(url: candidate.url, reason: "no stream URLs in it")
            }
        }
        return .candidatesAdded
    }

    // MARK: A followed stream

    /// An answer that is a segmented stream's playlist: from here `following` fetches its parts.
    private func follow(_ playlist: [UInt8], from candidate: Candidate, at playlistURL: String) {
        let events = FollowedStreamEvents(
            deliver: { [weak self] in self?.deliver($0) },
            streaming: { [weak self] head in
                guard let self else { return }
                publish(.streaming(url: head.url))
                logger.info("streaming", metadata: ["url": "\(head.url)", "status": "\(head.response.statusCode)"])
                fanOut.emit(.head(head))
            },
            lostAudio: { [weak self] in self?.lostAudio() },
            ended: { [weak self] in self?.followingEnded($0) })
        let stream = segmentedStreams.follow(playlist, at: playlistURL, from: candidate, lastRawTitle: lastRawTitle,
                                      congestion: congestion, events: events)
        phase = .following(Following(stream: stream, candidate: candidate, since: .now))
        splice.connectionStarted()
        stream.start(firstPlaylist: playlist)
    }

    private func lostAudio() {
        guard case .following(let following) = phase else { return }
        if following.stream.pipeline.packetCount > 0 { fanOut.emit(.discontinuity(position: splice.end)) }
    }

    /// Not the station's fault, and a retry would fail the same way: a local error (exit 3).
    private func finishOutOfDescriptors() {
        finish(.error(.localIO("\(station.id): cannot open a socket: \(DescriptorLimit.advice)")))
    }

    private func followingEnded(_ outcome: FollowedStreamEnd) {
        guard case .following(let following) = phase else { return }
        let pipeline = following.stream.pipeline
        pipeline.finish { deliver($0) }
        lastRawTitle = pipeline.lastRawTitle
        switch outcome {
        case .finished:
            history.hasStreamed = history.hasStreamed || pipeline.packetCount > 0
            phase = .idle
            finish(pipeline.packetCount > 0 ? .endOfStream
                   : .error(.stream(url: following.candidate.url, reason: following.stream.noAudioReason(ended: true))))
        case .descriptorsExhausted:
            phase = .idle
            history.hasStreamed = history.hasStreamed || pipeline.packetCount > 0
            finishOutOfDescriptors()
        case .lost(let error):
            phase = .idle
            if pipeline.packetCount == 0 {
                round.lastError = error
                if case .unsupportedFormat = error {
                    retryOrFinish(after: error, failure: .clientError)
                    return
                }
                connectToNextCandidate()
                return
            }
            history.hasStreamed = true
            retryOrFinish(after: error, failure: .transient, streamedFor: (ContinuousClock.now - following.since).seconds,
                          lost: error.description)
        }
    }

    /// Passes the pipeline's events on: frames a reconnect repeats are dropped, positions made
    /// contiguous across connections, and a gap marked with `.discontinuity`.
    private func deliver(_ event: StreamEvent) {
        switch event {
        case .packet(let packet):
            guard case .packet(let moved, let join) = splice.place(packet) else { return }
            switch join {
            case .seamless(let repeated):
                logger.notice("reconnected seamlessly", metadata: ["repeated frames skipped": "\(repeated)"])
            case .gap(let position, let repeated):
                logger.warning("reconnected with a gap: audio is missing here", metadata: ["repeated frames skipped": "\(repeated)"])
                fanOut.emit(.discontinuity(position: position))
            case nil:
                break
            }
            fanOut.emit(.packet(moved))
        case .metadata(let change):
            let position = splice.position(ofConnectionPosition: change.position)
            fanOut.emit(.metadata(TrackChange(info: change.info, position: position, source: change.source)))
        default:
            fanOut.emit(event)
        }
    }

    /// A connection ended or could not be made: try again later by the policy, or stop.
    private func retryOrFinish(after error: AirtapError?, failure: ReconnectPolicy.Failure,
                               streamedFor seconds: Double = 0, lost reason: String? = nil) {
        if let error { history.lastFailure = error }
        if let error, case .unsupportedFormat = error {
            // Asking again gets the same format again: say so at once.
            finish(.error(error))
            return
        }
        guard let policy = options.reconnect, history.hasStreamed || policy.retriesBeforeFirstAudio else {
            finish(error.map { .error($0) } ?? .endOfStream)
            return
        }
        switch history.decide(policy, after: failure, streamedFor: seconds) {
        case .giveUp:
            finish(error.map { .error($0) } ?? .endOfStream)
        case .retry(let attempt, let delay):
            phase = .reconnecting(attempt: attempt)
            let why = reason ?? error?.description ?? "connection failed"
            publish(.reconnecting(attempt: attempt, after: delay, reason: why))
            logger.warning("\(why); reconnecting in \(delay.formatted(decimals: 1)) s (attempt \(attempt))")
            splice.reconnecting()
            loop.schedule(after: delay) { [self] in
                loop.assertOnLoopThread()
                guard case .reconnecting(attempt) = phase else { return }
                startRound()
            }
        }
    }

    private func finish(_ reason: StopReason) {
        var reason = reason
        if case .limitReached = reason, !history.hasStreamed, let failure = noAudioFailure() {
            // The whole run went by without audio: that is the station's failure, not a done job
            // (cron mails a non-zero exit).
            reason = .error(failure)
        }
        switch phase {
        case .stopped:
            return
        case .streaming(let streaming):
            phase = .stopped(reason)
            loop.cancel(streaming.transfer)
            let pipeline = streaming.pipeline
            // Through `deliver`, like every other frame: a burst still being matched is not written
            // twice, and positions stay contiguous.
            pipeline.finish { deliver($0) }
        case .following(let following):
            phase = .stopped(reason)
            following.stream.stop()
            following.stream.pipeline.finish { deliver($0) }
        case .requesting(let id, _), .readingPlaylist(let id, _, _, _, _):
            phase = .stopped(reason)
            loop.cancel(id)
        case .idle, .reconnecting:
            phase = .stopped(reason)
        }
        logger.info("stopped: \(reason)")
        fanOut.emit(.ended(reason))
        status.stop(reason)
    }

    /// Why a run that is ending never delivered a frame, from what the connection is doing now
    /// (a server that accepted and said nothing, a head and no audio) or else from the last
    /// failure; nil when the connection now streaming has delivered frames.
    private func noAudioFailure() -> AirtapError? {
        switch phase {
        case .requesting(_, let candidate):
            return .stream(url: candidate.url, reason: "no answer from the server (no audio received)")
        case .readingPlaylist(_, let candidate, _, _, _):
            return .playlist(url: candidate.url, reason: "it did not arrive in time (no audio received)")
        case .streaming(let streaming):
            guard streaming.pipeline.packetCount == 0 else { return nil }
            return .stream(url: streaming.candidate.url, reason: "the server \(Self.answered(streaming.head)) sent no audio frames airtap can read")
        case .following(let following):
            guard following.stream.pipeline.packetCount == 0 else { return nil }
            return .stream(url: following.candidate.url, reason: following.stream.noAudioReason(ended: false))
        case .idle, .reconnecting, .stopped:
            return history.lastFailure ?? round.lastError
        }
    }

    /// The sinks hear it as an event, in order with the stream's events.
    private func publish(_ state: ConnectionState) {
        status.set(state)
        fanOut.emit(.connection(state))
    }
}
