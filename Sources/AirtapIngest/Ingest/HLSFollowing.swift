import AirtapStations
import AirtapSupport
import CurlSource
import HLSWire
import ICYWire
import Logging

/// HLS behind the network session's `StreamFollowing` seam: each answer that is an HLS playlist
/// becomes an `HLSFeed`. The variants that failed lately are kept here, across reconnects.
final class HLSFollowing: StreamFollowing {
    private let loop: CurlMultiLoop
    private let options: IngestOptions
    private let titleDecoding: TitleDecoding
    private let logger: Logger
    /// HLS variants that failed lately, set aside across reconnects.
    private var variantFallback = HLSVariantFallback()
    private let created = ContinuousClock.now
    private var age: Double { (ContinuousClock.now - created).seconds }

    /// A long VOD lists thousands of segments (10,000 are about 300 KB): its first playlist is
    /// bounded as every reload of it is.
    var maxPlaylistBytes: Int { HLSFeed.maxPlaylistBytes }

    init(loop: CurlMultiLoop, options: IngestOptions, titleDecoding: TitleDecoding, logger: Logger) {
        self.loop = loop
        self.options = options
        self.titleDecoding = titleDecoding
        self.logger = logger
    }

    func follow(_ playlist: [UInt8], at url: String, from candidate: CandidateList.Candidate, lastRawTitle: String?,
                congestion: SinkCongestion, events: FollowedStreamEvents) -> any FollowedStream {
        // The segments' elementary streams are MPEG audio or ADTS frames, whatever the container.
        let pipeline = IngestPipeline(metaint: nil, titleDecoding: titleDecoding, logger: logger,
                                      lastRawTitle: lastRawTitle, container: .audioFrames)
        let logger = logger
        // Weak: the feed's transfers keep the feed alive, and their callbacks may outlive a
        // session that was let go without a stop.
        let owner = HLSFeed.Owner(
            deliver: events.deliver,
            streaming: { url, head, description in
                var streamHead = StreamHead(response: head, url: url, hls: description)
                streamHead.isWholeProgram = description.map { !$0.isLive && $0.startsAtFirstSegment } ?? false
                events.streaming(streamHead)
            },
            lostSegments: { gap in
                let count = gap.missedSegments == 0 ? "some" : "\(gap.missedSegments)"
                logger.warning("HLS segments lost (\(gap.reason)): audio is missing here", metadata: ["segments": "\(count)"])
                events.lostAudio()
            },
            chooseMediaPlaylist: { [weak self] in self?.variantFallback.choose($0, now: self?.age ?? 0) },
            mediaPlaylistFailed: { [weak self] in self?.variantFallback.next(after: $0, among: $1, now: self?.age ?? 0) },
            ended: events.ended)
        logger.info("following an HLS playlist", metadata: ["url": "\(candidate.url)"])
        return HLSFeed(
            loop: loop, playlistURL: url, maxBitrate: options.maxBitrate, pipeline: pipeline, congestion: congestion,
            logger: logger, request: HLSRequests(stationURL: candidate.url, credentials: candidate.credentials, options: options).options(for:),
            owner: owner)
    }
}

extension HLSFeed: FollowedStream {
    func noAudioReason(ended: Bool) -> String {
        guard ended else { return "its HLS segments brought no audio airtap can read" }
        return "the HLS playlist ended without audio airtap can read" + (lastLoss.map { "; the last segment lost: \($0)" } ?? "")
    }
}

extension StationSession {
    /// A network session that follows HLS playlists.
    package convenience init(station: Station, loop: CurlMultiLoop, options: IngestOptions, sinks: [any StreamSink], logger: Logger) {
        var logger = logger
        logger[metadataKey: "station"] = "\(station.id)"
        self.init(station: station, loop: loop, options: options, sinks: sinks, logger: logger,
                  following: HLSFollowing(loop: loop, options: options, titleDecoding: station.titleDecoding, logger: logger))
    }
}
