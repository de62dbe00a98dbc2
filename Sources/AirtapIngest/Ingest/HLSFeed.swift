import AESDecryption
import AirtapSupport
import CurlSource
import HLSWire
import ICYWire
import Logging

/// One HLS station's transport on the curl loop: follows the media playlist (reloads timed by
/// `HLSPlaylistTracker`, on loop timers), fetches its segments one at a time in sequence order
/// (and the keys and init segments they need), decrypts AES-128 segments and hands each
/// segment's audio and timed titles to the station's one `IngestPipeline`, so the stream is
/// gapless across segments and the sinks see what an ICY connection gives them.
///
/// Everything a playlist or a segment says is bounded before it is held: a playlist by
/// `maxPlaylistBytes` and `HLSPlaylistLimits`, a segment by `maxSegmentBytes`, a key by its 16
/// bytes, the queue of segments to fetch by `maxQueuedSegments`.
final class HLSFeed: TransferDelegate, @unchecked Sendable {
    // Why @unchecked Sendable is sound: like the StationSession that owns it, every `var` is
    // touched only on the loop thread (curl callbacks and work posted with `loop.schedule`).

    /// What the feed needs of its station's session.
    struct Owner {
        /// A stream event out of the pipeline, to the session's splice and sinks.
        var deliver: (StreamEvent) -> Void
        /// The first segment answered: the stream is on (its URL, and a head for the sinks).
        var streaming: (String, ResponseHead, HLSStreamDescription?) -> Void
        /// Segments were lost: audio is missing here.
        var lostSegments: (HLSPlaylistTracker.Gap) -> Void
        /// Which of a master's media playlists (best first) to follow: the session remembers,
        /// across reconnects, which failed lately.
        var chooseMediaPlaylist: ([String]) -> String?
        /// The first media playlist failed: the next of these to follow, nil when none other may be tried.
        var mediaPlaylistFailed: (String, [String]) -> String?
        /// How the feed ended, told once.
        var ended: (FollowedStreamEnd) -> Void
    }

    static let maxPlaylistBytes = 4 << 20
    static let maxSegmentBytes = 32 << 20
    static let maxInitSegmentBytes = 1 << 20
    static let maxQueuedSegments = 20_000
    /// Segments that fail one after another before the station counts as lost.
    static let maxConsecutiveFailures = 5
    /// Variants tried one after another without a segment's audio in between: a master of
    /// thousands of failing variants is not walked through for ever.
    static let maxVariantSwitches = 8

    let loop: CurlMultiLoop
    private let request: (String) -> TransferOptions
    let logger: Logger
    let pipeline: IngestPipeline
    /// Sinks that may ask a segment's transfer to wait.
    let congestion: SinkCongestion
    let owner: Owner
    private let maxBitrate: Int?
    private let started = ContinuousClock.now

    var mediaURL: String
    private var tracker = HLSPlaylistTracker()
    private var lastTargetDuration = 6
    private var queue = HLSSegmentQueue()
    /// Gaps a reload found, reported when the segment after them is taken, where the audio is missing.
    private var gapsBefore: [Int: HLSPlaylistTracker.Gap] = [:]
    /// A gap found by a reload that brought no segment: it goes before the next one that comes.
    private var gapAhead: HLSPlaylistTracker.Gap?
    var reload: PlaylistLoad?
    /// Bumped when a reload is scheduled: a timer that finds another number is stale.
    private var reloadGeneration = 0
    var download: HLSDownload?
    var keys: [String: [UInt8]] = [:]
    var initSegments: [HLSMap: FMP4InitSegment] = [:]
    var consecutiveFailures = 0
    var variantSwitches = 0
    /// MPEG-TS PES packets the last segment fetched (of sequence `after`) ended inside.
    var unfinishedPES: (after: Int, packets: [TSUnfinishedPES])?
    /// Why the last segment was lost: what an error says when no audio came at all.
    private(set) var lastLoss: String?
    private var isEndListed = false
    var hasAnswered = false
    var stage = Stage.running
    /// Filled from the master (if any) and the first media playlist; sent with the first segment.
    private var variants: [HLSStreamDescription.Variant] = []
    private var chosenVariant: Int?
    /// The master's variants and its media playlists, best first; empty without a master.
    private var masterVariants: [HLSVariant] = []
    private var choices: [HLSMediaPlaylistChoice] = []
    private var description: HLSStreamDescription?

    enum Stage { case running, stopped }

    struct PlaylistLoad {
        let transfer: TransferID
        let url: String
        let startedAt: Double
        var body: [UInt8] = []
        var failure: String?
        var effectiveURL: String
    }

    init(loop: CurlMultiLoop, playlistURL: String, maxBitrate: Int?, pipeline: IngestPipeline, congestion: SinkCongestion,
         logger: Logger, request: @escaping (String) -> TransferOptions, owner: Owner) {
        self.loop = loop
        self.congestion = congestion
        self.mediaURL = playlistURL
        self.maxBitrate = maxBitrate
        self.pipeline = pipeline
        self.logger = logger
        self.request = request
        self.owner = owner
    }

    private var now: Double { (ContinuousClock.now - started).seconds }

    /// The station's first playlist, already fetched by the session: a master or a media playlist.
    func start(firstPlaylist body: [UInt8]) {
        loop.assertOnLoopThread()
        read(body, from: mediaURL, loadStartedAt: 0, isFirst: true, fromMaster: false)
    }

    /// Cancels what is in flight; nothing is reported after this.
    func stop() {
        loop.assertOnLoopThread()
        stage = .stopped
        if let reload { loop.cancel(reload.transfer) }
        if let download { loop.cancel(download.transfer) }
        reload = nil
        download = nil
    }

    // MARK: Playlists

    func read(_ body: [UInt8], from url: String, loadStartedAt: Double, isFirst: Bool, fromMaster: Bool) {
        let playlist: HLSPlaylist
        do {
            playlist = try HLSPlaylist.parse(body, baseURL: url)
        } catch {
            let reason = "not a playlist airtap can read: \(Self.describe(error))"
            reloadFailed(reason, isFirst: isFirst)
            return
        }
        switch playlist {
        case .master(let master):
            guard isFirst, !fromMaster else {
                let reason = fromMaster ? "a master playlist that points at another master playlist"
                                        : "the media playlist turned into a master playlist"
                conclude(.lost(.playlist(url: URLCredentials.redacted(url), reason: reason)))
                return
            }
            choices = master.mediaPlaylistChoices(maxBitrate: maxBitrate)
            guard let uri = owner.chooseMediaPlaylist(choices.map(\.uri)), let choice = choices.first(where: { $0.uri == uri }) else {
                conclude(.lost(.playlist(url: URLCredentials.redacted(url), reason: "a master playlist without variants")))
                return
            }
            variants = master.variants.map { HLSStreamDescription.Variant(bandwidth: $0.bandwidth, codecs: $0.codecs) }
            masterVariants = master.variants
            follow(choice, why: "HLS variant chosen")
            loadPlaylist(isFirst: true, fromMaster: true)
        case .media(let media):
            lastTargetDuration = media.targetDuration
            let update = tracker.loaded(media, loadStartedAt: loadStartedAt)
            if description == nil {
                description = HLSStreamDescription(media, handedOut: update.segments, variants: variants, chosenVariant: chosenVariant)
            }
            if update.gap?.reason == .sequenceWentBackwards { gapsBefore.removeAll() }
            enqueue(update.segments, after: update.gap)
            switch update.next {
            case .reload(let at): scheduleReload(at: at)
            case .ended: isEndListed = true
            case .stalled:
                conclude(.lost(.stream(url: URLCredentials.redacted(mediaURL), reason: "the HLS playlist brought no new segment for too long")))
                return
            }
            pump()
        }
    }

    private func follow(_ choice: HLSMediaPlaylistChoice, why: String) {
        chosenVariant = masterVariants.firstIndex(of: choice.variant)
        mediaURL = choice.uri
        logger.info("\(why)", metadata: [
            "bandwidth": "\(choice.variant.bandwidth)", "codecs": "\(choice.variant.codecs.joined(separator: ","))",
            "variants": "\(masterVariants.count)", "url": "\(URLCredentials.redacted(mediaURL))",
        ])
    }

    /// The media playlist followed now failed (its playlist, or a segment): the next best one of
    /// the master's takes over, from segment `sequence` on (nil: from its live edge, before any
    /// was handed out). False when there is no master or no other variant to try.
    private func switchVariant(resumingAt sequence: Int?, after reason: String) -> Bool {
        guard !choices.isEmpty, variantSwitches < Self.maxVariantSwitches,
              let uri = owner.mediaPlaylistFailed(mediaURL, choices.map(\.uri)),
              let choice = choices.first(where: { $0.uri == uri }) else { return false }
        variantSwitches += 1
        logger.warning("HLS variant set aside: \(reason)", metadata: ["url": "\(URLCredentials.redacted(mediaURL))"])
        if let reload { loop.cancel(reload.transfer) }
        reload = nil
        reloadGeneration += 1
        follow(choice, why: "HLS variant chosen in its place")
        if let sequence { tracker.switchedVariant(resumingAt: sequence, now: now) }
        queue = HLSSegmentQueue()
        unfinishedPES = nil  // another variant's segments are cut elsewhere
        isEndListed = false
        loadPlaylist(isFirst: sequence == nil, fromMaster: true)
        return true
    }

    private func enqueue(_ segments: [HLSSegment], after gap: HLSPlaylistTracker.Gap?) {
        let gap = Self.merged(gapAhead, gap)
        gapAhead = nil
        if let gap {
            if let first = segments.first { gapsBefore[first.sequence] = gap } else { gapAhead = gap }
        }
        queue.append(segments)
        let excess = queue.count - Self.maxQueuedSegments
        if excess > 0 {
            var missed = HLSPlaylistTracker.Gap(reason: .windowMovedPast, missedSegments: excess)
            for segment in queue.prefix(while: { _ in true }).prefix(excess) {
                missed = Self.merged(gapsBefore.removeValue(forKey: segment.sequence), missed) ?? missed
            }
            queue.dropFirst(excess)
            if let first = queue.first { gapsBefore[first.sequence] = Self.merged(gapsBefore[first.sequence], missed) }
        }
    }

    private static func merged(_ a: HLSPlaylistTracker.Gap?, _ b: HLSPlaylistTracker.Gap?) -> HLSPlaylistTracker.Gap? {
        guard let a else { return b }
        guard let b else { return a }
        return HLSPlaylistTracker.Gap(reason: b.reason, missedSegments: a.missedSegments + b.missedSegments)
    }

    /// The next segment off the queue; a gap a reload found before it is reported now, in its place.
    func takeNext() -> HLSSegment? {
        guard let segment = queue.first else { return nil }
        queue.dropFirst(1)
        if let gap = gapsBefore.removeValue(forKey: segment.sequence) { report(gap) }
        return segment
    }

    private func scheduleReload(at time: Double) {
        reloadGeneration += 1
        let generation = reloadGeneration
        loop.schedule(after: max(0, time - now)) { [weak self] in
            guard let self, self.stage == .running, self.reloadGeneration == generation else { return }
            self.loadPlaylist(isFirst: false, fromMaster: false)
        }
    }

    private func loadPlaylist(isFirst: Bool, fromMaster: Bool) {
        guard reload == nil else { return }
        let id = loop.start(request(mediaURL), delegate: self)
        reload = PlaylistLoad(transfer: id, url: mediaURL, startedAt: now, effectiveURL: mediaURL)
        firstLoad = isFirst ? (fromMaster: fromMaster, pending: true) : nil
        watch(id, seconds: playlistDeadline)
    }

    /// Set while the first media playlist (after a master) is loading: its failure ends the feed.
    var firstLoad: (fromMaster: Bool, pending: Bool)?

    /// `isFirst`: the first load of a media playlist, which nothing followed yet.
    func reloadFailed(_ reason: String, isFirst: Bool) {
        let resumeAt = isFirst ? nil : queue.first?.sequence ?? tracker.nextSequence
        if switchVariant(resumingAt: resumeAt, after: "its playlist cannot be loaded: \(reason)") { return }
        if isFirst {
            conclude(.lost(.playlist(url: URLCredentials.redacted(mediaURL), reason: reason)))
            return
        }
        logger.warning("HLS playlist reload failed: \(reason)", metadata: ["url": "\(URLCredentials.redacted(mediaURL))"])
        switch tracker.reloadFailed(lastTargetDuration: lastTargetDuration, at: now) {
        case .reload(let at): scheduleReload(at: at)
        case .ended: isEndListed = true
        case .stalled:
            conclude(.lost(.stream(url: URLCredentials.redacted(mediaURL), reason: "the HLS playlist cannot be reloaded: \(reason)")))
        }
    }

    // MARK: Segments

    /// Starts the next fetch when none is running: the init segment or key the next segment
    /// needs, else the segment.
    func pump() {
        guard stage == .running, download == nil else { return }
        guard let segment = queue.first else {
            if isEndListed, reload == nil { conclude(.finished) }
            return
        }
        if let map = segment.map, initSegments[map] == nil {
            let id = loop.start(options(map.uri, range: map.byteRange), delegate: self)
            start(.initSegment(id, map: map, .initSegment(limit: Self.maxInitSegmentBytes)))
            watch(id, seconds: Self.smallFetchDeadline)
            return
        }
        var decryptor: AES128CBCDecryptor?
        if let key = segment.key {
            switch key.method {
            case .unsupported(let method):
                conclude(.lost(.unsupportedFormat(url: URLCredentials.redacted(mediaURL), format: "HLS encrypted with \(method)")))
                return
            case .aes128:
                guard let value = keys[key.uri] else {
                    let id = loop.start(options(key.uri, range: nil), delegate: self)
                    start(.key(id, uri: key.uri, .key))
                    watch(id, seconds: Self.smallFetchDeadline)
                    return
                }
                do {
                    decryptor = try AES128CBCDecryptor(key: value, iv: key.initializationVector(forSequence: segment.sequence))
                } catch {
                    _ = takeNext()
                    segmentFailed(segment, reason: "cannot decrypt: \(error)")
                    // On the next turn: a queue of such segments must not recurse.
                    loop.schedule(after: 0) { [weak self] in self?.pump() }
                    return
                }
            }
        }
        _ = takeNext()
        let format: HLSSegmentFormat? = segment.map.flatMap { initSegments[$0] }.map { .fragmentedMP4($0) }
        if let title = segment.title {
            pipeline.announce(TrackInfo(streamTitle: title.streamTitle), source: .timedMetadata)
        }
        let reader = HLSSegmentReader(format: format, continuing: takeUnfinishedPES(before: segment))
        let id = loop.start(options(segment.uri, range: segment.byteRange), delegate: self)
        start(.segment(HLSSegmentFetch(transfer: id, segment: segment, reader: reader, decryptor: decryptor)))
        watch(id, seconds: Self.segmentDeadline(segment))
    }

    /// How long a segment may take: a server that trickles one just above the stall rate would
    /// otherwise hold the station for hours while its playlist moves on.
    static func segmentDeadline(_ segment: HLSSegment) -> Double {
        min(max(30, 4 * segment.duration), 600)
    }

    /// A key or an init segment is small: one that takes this long is trickled.
    static let smallFetchDeadline = 30.0

    /// A playlist reload: a few target durations at most, or the live window moves on without us.
    private var playlistDeadline: Double {
        min(max(10, 3 * Double(lastTargetDuration)), 90)
    }

    /// Fails fetch `id` (a reload or a download) if it still runs after `seconds`, not counting
    /// a wait for a congested sink, which is ours: a server trickling just above curl's stall
    /// rate would otherwise hold the station for hours.
    private func watch(_ id: TransferID, seconds: Double) {
        loop.schedule(after: seconds) { [weak self] in
            guard let self, self.stage == .running else { return }
            let reason = "it took longer than \(Int(seconds)) s"
            if var load = self.reload, load.transfer == id {
                load.failure = reason
                self.reload = load
                self.loop.cancel(id)
                return
            }
            guard let download = self.download, download.transfer == id else { return }
            switch download {
            case .segment(var fetch):
                if fetch.isPaused {
                    self.watch(id, seconds: seconds)
                    return
                }
                fetch.failure = reason
                self.download = .segment(fetch)
            case .key, .initSegment:
                self.download = download.failingSmallBody(reason)
            }
            self.loop.cancel(id)
        }
    }

    /// What the last segment ended inside of, when `segment` continues it: the next in sequence,
    /// with no discontinuity between them.
    private func takeUnfinishedPES(before segment: HLSSegment) -> [TSUnfinishedPES] {
        defer { unfinishedPES = nil }
        guard let unfinishedPES, !unfinishedPES.packets.isEmpty else { return [] }
        if unfinishedPES.after + 1 == segment.sequence, !segment.isDiscontinuity { return unfinishedPES.packets }
        logger.warning("dropped an MPEG-TS PES packet cut off at the end of segment \(unfinishedPES.after): the next segment does not continue it")
        return []
    }

    private func start(_ fetch: HLSDownload) {
        download = fetch
    }

    private func options(_ url: String, range: HLSByteRange?) -> TransferOptions {
        var options = request(url)
        if let range, range.length > 0 {
            options.headers.append("Range: bytes=\(range.offset)-\(range.offset + range.length - 1)")
        }
        return options
    }

    func segmentFailed(_ segment: HLSSegment, reason: String) {
        consecutiveFailures += 1
        lastLoss = reason
        if switchVariant(resumingAt: segment.sequence, after: "segment \(segment.sequence) failed: \(reason)") { return }
        logger.warning("HLS segment lost: \(reason)", metadata: ["sequence": "\(segment.sequence)"])
        report(tracker.segmentFailed())
        if consecutiveFailures >= Self.maxConsecutiveFailures {
            conclude(.lost(.stream(url: URLCredentials.redacted(mediaURL),
                              reason: "\(consecutiveFailures) HLS segments in a row failed, the last: \(reason)")))
        }
    }

    private func report(_ gap: HLSPlaylistTracker.Gap) {
        guard stage == .running else { return }
        owner.lostSegments(gap)
    }

    func conclude(_ outcome: FollowedStreamEnd) {
        guard stage == .running else { return }
        stop()
        owner.ended(outcome)
    }

    func feed(_ bytes: ArraySlice<UInt8>, into fetch: inout HLSSegmentFetch) {
        if let answer = fetch.firstAnswer, let first = bytes.first {
            // Before the segment's audio: the sinks hear of the stream, and what it is, first.
            fetch.firstAnswer = nil
            hasAnswered = true
            let format = fetch.segment.map != nil ? "fMP4" : HLSSegmentFormat.startingWith(first).name
            description?.container = format
            owner.streaming(answer.url, answer.head, description)
        }
        var audioBytes = 0
        fetch.reader.push(bytes) { handle($0, audioBytes: &audioBytes) }
        fetch.audioBytes += audioBytes
    }

    func handle(_ event: HLSMediaEvent, audioBytes: inout Int) {
        if case .audio(let audio) = event { audioBytes += audio.count }
        pipeline.consume(event) { owner.deliver($0) }
    }
}
