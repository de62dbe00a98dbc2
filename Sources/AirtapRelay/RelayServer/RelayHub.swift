import AirtapIngest
import AirtapKit
import AirtapStations
import FoundationEssentials
import ICYWire
import Logging
import NIOCore
import NIOHTTP1

/// One mount of the relay: its station's ring of recent packets, its listeners, its counters.
/// Loop-confined: the server runs one event loop, so every ring and every listener live on the
/// same thread and the hot path (a packet to every listener) takes no lock and makes no hop.
/// `RelayDirectory` owns the hubs and the connections that have not chosen a mount yet.
final class RelayHub {
    let station: Station
    /// This station's place in the configuration (routes name it).
    let index: Int
    private let configuration: RelayConfiguration
    private let mailbox: IngestMailbox
    private let logger: Logger

    private(set) var ring: PacketRing
    /// The connections streaming this mount.
    private var listeners: [Int: RelayConnectionHandler] = [:]
    private(set) var stream: RelayResponses.StreamDescription
    private(set) var codec: AudioCodec?
    /// A transcoded mount: the codec the station sends (`codec` is what listeners get).
    private(set) var sourceCodec: AudioCodec?
    /// Ogg: the current link's header pages, sent first to a listener who joins after them.
    private var linkHeaders = OggLinkHeaders()
    /// `linkHeaders` in one buffer, made at the first join after they changed: every joining
    /// listener then shares it, as NIO's buffers are copied on write only.
    private var joinedLinkHeaders: ByteBuffer?
    private(set) var sampleRate: Int?
    private(set) var channels: Int?
    private(set) var upstream = ConnectionState.idle
    private(set) var currentTitle: String?
    /// The same title as the Icecast status shows it.
    private(set) var nowPlaying: IcecastStatus.NowPlaying?
    /// bit/s, from the stream's headers (an Ogg link's nominal rate).
    private(set) var nominalBitrate: Int?
    /// When the upstream first streamed (Icecast's `stream_start`).
    private(set) var streamStart: Date?
    private(set) var counters = Counters()
    /// The mailbox's other half: the two buffers swap at each drain.
    private var batch = CircularBuffer<IngestMailbox.Item>(initialCapacity: 256)

    struct Counters {
        var packetsReceived = 0
        var audioBytesReceived = 0
        var bytesRelayed = 0
        var listenersServed = 0
        var peakListeners = 0
        var skips = 0
        var stalledDisconnects = 0
        var reconnects = 0
        var droppedPackets = 0
    }

    init(station: Station, index: Int, configuration: RelayConfiguration, mailbox: IngestMailbox, logger: Logger) {
        self.station = station
        self.index = index
        self.configuration = configuration
        self.mailbox = mailbox
        var logger = logger
        if configuration.stations.count > 1 { logger[metadataKey: "station"] = "\(station.id)" }
        self.logger = logger
        self.ring = PacketRing(capacitySeconds: configuration.ringSeconds, capacityBytes: configuration.ringBytes)
        self.stream = RelayResponses.StreamDescription(name: station.name)
    }

    // MARK: Ingest

    func drainMailbox(at now: NIODeadline) {
        let dropped = mailbox.take(into: &batch, at: now)
        if dropped > 0 {
            counters.droppedPackets += dropped
            logger.warning("the relay fell behind its upstream: dropped \(dropped) packets")
        }
        while !batch.isEmpty {
            switch batch.removeFirst() {
            case .audio(let bytes, let packets, let duration):
                ring.append(audio: bytes, duration: duration)
                counters.packetsReceived += packets
                counters.audioBytesReceived += bytes.readableBytes
            case .title(let block, let raw, let shown):
                ring.changeTitle(to: block)
                currentTitle = raw
                nowPlaying = shown
                logger.info("title: \(raw)")
            case .head(let head):
                describe(head)
            case .sourceFormat(let header):
                sourceCodec = header.codec
            case .format(let header):
                if let codec, codec.mimeType != header.codec.mimeType {
                    // Listeners get what they have of the old codec, then their responses end.
                    ring.startFormat()
                    logger.notice("the stream changed from \(codec.rawValue) to \(header.codec.rawValue): listeners reconnect for it")
                }
                codec = header.codec
                sampleRate = header.sampleRate
                channels = header.channels > 0 ? header.channels : nil
                stream.contentType = header.codec.mimeType
                nominalBitrate = header.bitrate
                if stream.bitrate == nil || station.transcode != nil { stream.bitrate = header.bitrate.map { $0 / 1000 } }
            case .oggHeaderPage(let page, let startsLink):
                // The run holding this page is the next entry appended.
                if startsLink { ring.linkStart = ring.nextSequence }
                linkHeaders.add(page, startsLink: startsLink)
                joinedLinkHeaders = nil
            case .upstream(let state):
                if case .reconnecting = state { counters.reconnects += 1 }
                upstream = state
            }
        }
        guard !ring.isEmpty else { return }
        for connection in listeners.values {
            connection.audioArrived(ring: ring, burstSeconds: configuration.burstSeconds)
        }
    }

    private func describe(_ head: StreamHead) {
        let response = head.response
        stream.name = response.icyName ?? station.name
        stream.genre = response.icyGenre
        stream.url = response.icyURL
        stream.bitrate = response.icyBitrate
        if case .audio(let codec?) = response.payload { stream.contentType = codec.mimeType }
        if let transcode = station.transcode {
            // Listeners get the encoder's stream, not the station's.
            stream.contentType = AudioCodec.mp3.mimeType
            stream.bitrate = transcode.bitrate
        }
        upstream = .streaming(url: head.url)
        if streamStart == nil { streamStart = Date() }
    }

    /// What people see the mount called: the name the user gave the station, or for a bare URL
    /// the stream's own (`icy-name`), so two stations of one broadcaster stay apart.
    var displayName: String {
        station.isNamedByStream ? stream.name : station.name
    }

    // MARK: Listeners

    var listenerCount: Int { listeners.count }

    /// A request for this mount's stream (GET or HEAD).
    func streamRequested(_ head: HTTPRequestHead, by connection: RelayConnectionHandler) {
        let wantsMetadata = head.headers["Icy-MetaData"].contains { $0.trimmingSpaces() == "1" }
        // Never ICY metadata inside Ogg: titles travel in its links, as with Icecast.
        let metaint = wantsMetadata && codec?.isChained != true ? configuration.metaint : nil
        guard head.method != .HEAD else {
            connection.answer(RelayResponses.streamHead(stream, metaint: metaint), status: 200)
            return
        }
        let count = listenerCount
        guard count < configuration.maxListeners else {
            logger.notice("#\(connection.id) turned away: \(count) listeners is the maximum")
            connection.answer(RelayResponses.text(.serviceUnavailable, "503 server full: \(count) listeners is the maximum"),
                              status: 503)
            return
        }
        listeners[connection.id] = connection
        counters.listenersServed += 1
        counters.peakListeners = max(counters.peakListeners, listenerCount)
        let agent = head.headers["User-Agent"].first ?? "?"
        logger.info("listener #\(connection.id) connected from \(connection.remote) (\(agent)\(metaint == nil ? "" : ", metadata"))")
        connection.streamRequested(from: self, metaint: metaint, ring: ring, burstSeconds: configuration.burstSeconds)
    }

    /// A listener's first audio is due: its response head, an Ogg link's header pages, the burst.
    func streamStarted(_ connection: RelayConnectionHandler) {
        connection.send(RelayResponses.streamHead(stream, metaint: connection.metaint))
        sendLinkHeadersIfNeeded(to: connection)
        pump(connection)
    }

    /// Ogg: a listener starting after the current link's first entry gets that link's header
    /// pages first (what Icecast does), so any Ogg player can decode what follows. The machine
    /// started it at `burstStart` of this same ring, so the hub knows where.
    private func sendLinkHeadersIfNeeded(to connection: RelayConnectionHandler) {
        guard codec?.isChained == true, !linkHeaders.isEmpty,
              ring.burstStart(seconds: configuration.burstSeconds) != ring.linkStart else { return }
        let pages = joinedLinkHeaders ?? {
            var pages = ByteBuffer()
            pages.reserveCapacity(linkHeaders.byteCount)
            for page in linkHeaders.pages { pages.writeBytes(page) }
            return pages
        }()
        joinedLinkHeaders = pages
        connection.send(pages)
        counters.bytesRelayed += pages.readableBytes
    }

    func listenerLeft(_ connection: RelayConnectionHandler, reason: ListenerStopReason) {
        guard listeners.removeValue(forKey: connection.id) != nil else { return }
        if case .stalled = reason { counters.stalledDisconnects += 1 }
        logger.info("listener #\(connection.id) (\(connection.remote)) left after \(connection.bytesSent) bytes: \(reason)")
    }

    /// Writes a listener everything it may have now: until its socket is full or it is live.
    func pump(_ connection: RelayConnectionHandler) {
        let result = connection.pump(ring)
        counters.bytesRelayed += result.bytes
        if result.skippedPackets > 0 {
            counters.skips += 1
            logger.notice("listener #\(connection.id) fell behind: skipped \(result.skippedPackets) packets to the live edge")
        }
    }

    // MARK: Status

    func status(connections: RelayDirectory.ConnectionCounters, uptime: Double) -> RelayStatus {
        RelayStatus(
            station: station.id,
            stationName: displayName,
            upstream: upstream.name,
            upstreamDetail: upstream.description,
            codec: codec?.rawValue,
            transcodedFrom: station.transcode == nil ? nil : sourceCodec?.rawValue,
            bitrate: stream.bitrate,
            title: currentTitle,
            listeners: listenerCount,
            peakListeners: counters.peakListeners,
            listenersServed: counters.listenersServed,
            maxListeners: configuration.maxListeners,
            bytesRelayed: counters.bytesRelayed,
            packetsReceived: counters.packetsReceived,
            audioBytesReceived: counters.audioBytesReceived,
            skips: counters.skips,
            stalledDisconnects: counters.stalledDisconnects,
            reconnects: counters.reconnects,
            droppedPackets: counters.droppedPackets,
            connectionsAccepted: connections.accepted,
            closedBeforeRequest: connections.closedBeforeRequest,
            lastCloseBeforeRequest: connections.lastCloseBeforeRequest,
            uptimeSeconds: uptime)
    }
}
