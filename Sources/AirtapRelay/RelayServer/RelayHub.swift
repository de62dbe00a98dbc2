import AirtapKit
import FoundationEssentials
import ICYWire
import Logging
import NIOCore
import NIOHTTP1

/// The relay's state: the ring, the connections, the counters. Loop-confined: the server runs
/// one event loop, so the ring and every listener live on the same thread and the hot path
/// (a packet to every listener) takes no lock and makes no hop.
final class RelayHub {
    private let configuration: RelayConfiguration
    private let mailbox: IngestMailbox
    private let logger: Logger
    private let limits: ListenerLimits
    private let startedAt = NIODeadline.now()

    private(set) var ring: PacketRing
    private var connections: [Int: RelayConnectionHandler] = [:]
    private var nextConnectionID = 1
    private var stream: RelayResponses.StreamDescription
    private var codec: AudioCodec?
    private var upstream = ConnectionState.idle
    private var currentTitle: String?
    private var counters = Counters()
    /// The mailbox's other half: the two buffers swap at each drain.
    private var batch = CircularBuffer<IngestMailbox.Item>(initialCapacity: 256)
    private var tick: RepeatedTask?
    private var isShuttingDown = false

    private struct Counters {
        var packetsReceived = 0
        var audioBytesReceived = 0
        var bytesRelayed = 0
        var listenersServed = 0
        var peakListeners = 0
        var skips = 0
        var stalledDisconnects = 0
        var connectionsAccepted = 0
        var closedBeforeRequest = 0
        var lastCloseBeforeRequest: String?
    }

    init(configuration: RelayConfiguration, mailbox: IngestMailbox, logger: Logger) {
        self.configuration = configuration
        self.mailbox = mailbox
        self.logger = logger
        self.limits = ListenerLimits(requestTimeout: .milliseconds(Int64(configuration.requestTimeout * 1000)),
                                     stallTimeout: .milliseconds(Int64(configuration.stallTimeout * 1000)))
        self.ring = PacketRing(capacitySeconds: configuration.ringSeconds, capacityBytes: configuration.ringBytes)
        self.stream = RelayResponses.StreamDescription(name: configuration.station.name)
    }

    func startTicking(on loop: any EventLoop, bound: NIOLoopBound<RelayHub>) {
        tick = loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { _ in
            bound.value.checkDeadlines(at: .now())
        }
    }

    // MARK: Ingest

    func drainMailbox() {
        let dropped = mailbox.take(into: &batch)
        if dropped > 0 { logger.warning("the relay fell behind its upstream: dropped \(dropped) packets") }
        let hadAudio = !ring.isEmpty
        while !batch.isEmpty {
            switch batch.removeFirst() {
            case .audio(let bytes, let packets, let duration):
                ring.append(audio: bytes, duration: duration)
                counters.packetsReceived += packets
                counters.audioBytesReceived += bytes.readableBytes
            case .title(let block, let raw):
                ring.changeTitle(to: block)
                currentTitle = raw
                logger.info("title: \(raw)")
            case .head(let head):
                describe(head)
            case .format(let header):
                codec = header.codec
                stream.contentType = header.codec.mimeType
                if stream.bitrate == nil { stream.bitrate = header.bitrate.map { $0 / 1000 } }
            case .upstream(let state):
                upstream = state
            }
        }
        guard !ring.isEmpty else { return }
        for connection in connections.values {
            if !hadAudio, connection.machine.audioArrived(ring: ring, burstSeconds: configuration.burstSeconds) {
                connection.send(RelayResponses.streamHead(stream, metaint: connection.metaint))
            }
            if connection.machine.isStreaming { pump(connection) }
        }
    }

    private func describe(_ head: StreamHead) {
        let response = head.response
        stream.name = response.icyName ?? configuration.station.name
        stream.genre = response.icyGenre
        stream.url = response.icyURL
        stream.bitrate = response.icyBitrate
        if case .audio(let codec?) = response.payload { stream.contentType = codec.mimeType }
        upstream = .streaming(url: head.url)
    }

    // MARK: Connections

    func connected(_ connection: RelayConnectionHandler) -> Int {
        let id = nextConnectionID
        nextConnectionID += 1
        counters.connectionsAccepted += 1
        connections[id] = connection
        return id
    }

    func disconnected(_ connection: RelayConnectionHandler) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        let reason = connection.machine.stopReason ?? .clientClosed
        if !connection.hadRequest {
            counters.closedBeforeRequest += 1
            counters.lastCloseBeforeRequest = "\(reason) after \(connection.requestBytes.received) bytes from \(connection.remote)"
            logger.debug("#\(connection.id) closed before a request: \(counters.lastCloseBeforeRequest ?? "")")
        }
        if case .answered = reason {
            logger.debug("#\(connection.id) \(reason)")
        } else if connection.wasListener {
            logger.info("listener #\(connection.id) left after \(connection.bytesSent) bytes: \(reason)")
        }
    }

    var listenerCount: Int {
        connections.values.reduce(0) { $0 + ($1.machine.isListener ? 1 : 0) }
    }

    func received(_ head: HTTPRequestHead, from connection: RelayConnectionHandler, localAddress: SocketAddress?) {
        guard !isShuttingDown else {
            connection.answer(RelayResponses.text(.serviceUnavailable, "503 shutting down"), status: 503)
            return
        }
        let includeBody = head.method != .HEAD
        switch RelayRoute(method: head.method, uri: head.uri, stationID: configuration.station.id) {
        case .stream:
            let wantsMetadata = head.headers["Icy-MetaData"].contains { $0.trimmingSpaces() == "1" }
            let metaint = wantsMetadata ? configuration.metaint : nil
            guard includeBody else {
                connection.answer(RelayResponses.streamHead(stream, metaint: metaint), status: 200)
                return
            }
            let listeners = listenerCount
            guard listeners < configuration.maxListeners else {
                logger.notice("#\(connection.id) turned away: \(listeners) listeners is the maximum")
                connection.answer(RelayResponses.text(.serviceUnavailable, "503 server full: \(listeners) listeners is the maximum"),
                                  status: 503)
                return
            }
            startListener(connection, metaint: metaint, head: head)
        case .status:
            let body = statusJSON()
            connection.answer(RelayResponses.document(status: .ok, contentType: "application/json", body: body,
                                                      includeBody: includeBody), status: 200)
        case .playlistPLS:
            connection.answer(RelayResponses.playlistPLS(streamURL: streamURL(head, localAddress), name: stream.name,
                                                         includeBody: includeBody), status: 200)
        case .playlistM3U:
            connection.answer(RelayResponses.playlistM3U(streamURL: streamURL(head, localAddress), name: stream.name,
                                                         includeBody: includeBody), status: 200)
        case .notFound:
            connection.answer(RelayResponses.text(.notFound, "404 not found: the stream is at /stream", includeBody: includeBody),
                              status: 404)
        case .methodNotAllowed:
            connection.answer(RelayResponses.text(.methodNotAllowed, "405 method not allowed", extraHeaders: ["Allow: GET, HEAD"]),
                              status: 405)
        }
    }

    private func streamURL(_ head: HTTPRequestHead, _ localAddress: SocketAddress?) -> String {
        RelayResponses.streamURL(hostHeader: head.headers["Host"].first,
                                 boundHost: localAddress?.ipAddress ?? configuration.host,
                                 boundPort: localAddress?.port ?? configuration.port)
    }

    private func startListener(_ connection: RelayConnectionHandler, metaint: Int?, head: HTTPRequestHead) {
        connection.metaint = metaint
        counters.listenersServed += 1
        counters.peakListeners = max(counters.peakListeners, listenerCount + 1)
        let agent = head.headers["User-Agent"].first ?? "?"
        logger.info("listener #\(connection.id) connected (\(agent)\(metaint == nil ? "" : ", metadata"))")
        switch connection.machine.streamRequested(metaint: metaint, ring: ring, burstSeconds: configuration.burstSeconds) {
        case .sendHead:
            connection.send(RelayResponses.streamHead(stream, metaint: metaint))
            pump(connection)
        case .waitForAudio:
            break
        }
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

    private func checkDeadlines(at now: NIODeadline) {
        for connection in connections.values {
            guard case .close(let reason) = connection.machine.tick(at: now, limits: limits) else { continue }
            if case .stalled = reason {
                counters.stalledDisconnects += 1
                logger.warning("listener #\(connection.id) disconnected: \(reason)")
            }
            connection.close()
        }
    }

    func shutdown() {
        isShuttingDown = true
        tick?.cancel()
        tick = nil
        for connection in connections.values {
            connection.machine.stop(.serverShutdown)
            connection.close()
        }
    }

    // MARK: Status

    var status: RelayStatus {
        RelayStatus(
            station: configuration.station.id,
            stationName: stream.name,
            upstream: upstream.name,
            upstreamDetail: upstream.description,
            codec: codec?.rawValue,
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
            connectionsAccepted: counters.connectionsAccepted,
            closedBeforeRequest: counters.closedBeforeRequest,
            lastCloseBeforeRequest: counters.lastCloseBeforeRequest,
            uptimeSeconds: Double((NIODeadline.now() - startedAt).nanoseconds / 1_000_000) / 1000)
    }

    private func statusJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(status) else { return "{}" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
