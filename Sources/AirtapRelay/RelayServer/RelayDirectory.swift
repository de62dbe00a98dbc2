import AirtapKit
import AirtapSupport
import FoundationEssentials
import Glibc
import Logging
import NIOCore
import NIOHTTP1

/// The server's front desk: every connection from accept to close, the request routing, and the
/// server-wide documents (`/status`, `/status-json.xsl`, `/metrics`, the web page). A stream
/// request is handed to its mount's `RelayHub`. Loop-confined, like the hubs.
final class RelayDirectory {
    let hubs: [RelayHub]
    private let configuration: RelayConfiguration
    private let logger: Logger
    private let limits: ListenerLimits
    private let startedAt = NIODeadline.now()
    private let startDate = Date()
    private let connections: ConnectionTable<RelayConnectionHandler>
    private var counters = ConnectionCounters()
    private var state = State.running(tick: nil)
    /// The library at `/recordings`, when serve shows one.
    private let shelf: RecordingShelf?
    /// Connections sending a recording now: each holds a second descriptor, the file's.
    private var fileTransfers = 0
    /// More at once get 503: the descriptors the budget leaves for recordings stay theirs.
    static let maxFileTransfers = 32

    /// Running until `shutdown`; stopped, it refuses new connections and answers requests 503.
    private enum State {
        /// `tick` holds connections to their timeouts, once started.
        case running(tick: RepeatedTask?)
        case stopped
    }

    struct ConnectionCounters {
        var accepted = 0
        /// Closed at accept because the server held all the connections its descriptors allow.
        var refused = 0
        var closedBeforeRequest = 0
        var lastCloseBeforeRequest: String?
    }

    init(hubs: [RelayHub], configuration: RelayConfiguration, shelf: RecordingShelf? = nil, logger: Logger) {
        self.hubs = hubs
        self.shelf = shelf
        self.configuration = configuration
        self.logger = logger
        self.connections = ConnectionTable(budget: configuration.connectionBudget)
        self.limits = ListenerLimits(requestTimeout: .milliseconds(Int64(configuration.requestTimeout * 1000)),
                                     stallTimeout: .milliseconds(Int64(configuration.stallTimeout * 1000)))
    }

    /// How often connections are held to their timeouts: a timeout takes effect up to this late.
    static let deadlineCheckInterval = TimeAmount.seconds(1)

    func startTicking(on loop: any EventLoop, bound: NIOLoopBound<RelayDirectory>) {
        guard case .running(tick: .none) = state else { return }
        let tick = loop.scheduleRepeatedTask(initialDelay: Self.deadlineCheckInterval, delay: Self.deadlineCheckInterval) { _ in
            bound.value.checkDeadlines(at: loop.now)
        }
        state = .running(tick: tick)
    }

    private var uptime: Double { Double((NIODeadline.now() - startedAt).nanoseconds / 1_000_000) / 1000 }

    // MARK: Connections

    /// The new connection's id; nil when it must be closed at once (every connection its
    /// descriptors allow is held, and all of them asked for something). For it the connection
    /// that has waited longest without a request may be closed.
    func connected(_ connection: RelayConnectionHandler) -> Int? {
        counters.accepted += 1
        guard case .running = state, let id = connections.admit(connection) else {
            counters.refused += 1
            if counters.refused == 1 || counters.refused.isMultiple(of: 1000) {
                logger.warning("refusing connections: \(connections.count) open, at most \(configuration.connectionBudget.maxConnections) (descriptors kept for recordings); \(counters.refused) refused so far")
            }
            return nil
        }
        return id
    }

    func disconnected(_ connection: RelayConnectionHandler, reason: ListenerStopReason) {
        guard connections.remove(connection.id) != nil else { return }
        if connection.sentFile { fileTransfers -= 1 }
        connection.hub?.listenerLeft(connection, reason: reason)
        if !connection.hadRequest {
            counters.closedBeforeRequest += 1
            counters.lastCloseBeforeRequest = "\(reason) after \(connection.requestBytes.received) bytes from \(connection.remote)"
            logger.debug("#\(connection.id) closed before a request: \(counters.lastCloseBeforeRequest ?? "")")
        } else if case .answered = reason {
            logger.debug("#\(connection.id) \(reason)")
        }
    }

    func received(_ head: HTTPRequestHead, from connection: RelayConnectionHandler, localAddress: SocketAddress?) {
        guard case .running = state else {
            connection.answer(RelayResponses.text(.serviceUnavailable, "503 shutting down"), status: 503)
            return
        }
        let includeBody = head.method != .HEAD
        let wantsPage = head.headers["Accept"].contains { $0.contains("text/html") }
        switch RelayRoute(method: head.method, uri: head.uri, stationIDs: hubs.map(\.station.id), wantsPage: wantsPage,
                          servesRecordings: shelf != nil) {
        case .stream(let index):
            hubs[index].streamRequested(head, by: connection)
        case .status:
            connection.answer(RelayResponses.document(status: .ok, contentType: "application/json", body: statusJSON(),
                                                      includeBody: includeBody), status: 200)
        case .icestats:
            let base = baseURL(head, localAddress)
            let body = IcecastStatus.json(sources: hubs.map { source($0, base: base) }, serverStart: startDate,
                                          host: localAddress?.ipAddress ?? configuration.host)
            connection.answer(RelayResponses.document(status: .ok, contentType: "application/json; charset=utf-8", body: body,
                                                      extraHeaders: ["Access-Control-Allow-Origin: *"],
                                                      includeBody: includeBody), status: 200)
        case .metrics:
            let body = RelayMetrics.text(hubs.map { ($0.station.id, $0.status(connections: counters, uptime: uptime)) },
                                         connections: counters, uptime: uptime)
            connection.answer(RelayResponses.document(status: .ok, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                                      body: body, includeBody: includeBody), status: 200)
        case .page:
            let base = baseURL(head, localAddress)
            let body = RelayPage.html(sources: hubs.map { source($0, base: base) })
            connection.answer(RelayResponses.document(status: .ok, contentType: "text/html; charset=utf-8", body: body,
                                                      extraHeaders: RelayPage.securityHeaders, includeBody: includeBody), status: 200)
        case .playlistPLS(let index):
            let hub = hubs[index]
            connection.answer(RelayResponses.playlistPLS(streamURL: streamURL(head, localAddress, index: index), name: hub.displayName,
                                                         includeBody: includeBody), status: 200)
        case .playlistM3U(let index):
            let hub = hubs[index]
            connection.answer(RelayResponses.playlistM3U(streamURL: streamURL(head, localAddress, index: index), name: hub.displayName,
                                                         includeBody: includeBody), status: 200)
        case .recordings:
            recordingsPage(head, connection: connection, includeBody: includeBody)
        case .recordingFile(let id):
            sendRecording(id, head: head, connection: connection, includeBody: includeBody)
        case .notFound:
            let paths = hubs.count == 1 ? "the stream is at /stream" : "the streams are at " + hubs.map { "/" + $0.station.id }.joined(separator: ", ")
            connection.answer(RelayResponses.text(.notFound, "404 not found: \(paths)", includeBody: includeBody), status: 404)
        case .methodNotAllowed:
            connection.answer(RelayResponses.text(.methodNotAllowed, "405 method not allowed", extraHeaders: ["Allow: GET, HEAD"]),
                              status: 405)
        }
    }

    private func recordingsPage(_ head: HTTPRequestHead, connection: RelayConnectionHandler, includeBody: Bool) {
        guard let shelf else { return }
        let query = RelayRoute.queryValue("q", in: head.uri).map(\.trimmedSpaces)
        do {
            let entries = try shelf.entries(matching: query)
            let body = RecordingsPage.html(entries: entries, query: query, limit: RecordingShelf.pageLimit)
            connection.answer(RelayResponses.document(status: .ok, contentType: "text/html; charset=utf-8", body: body,
                                                      extraHeaders: RecordingsPage.securityHeaders, includeBody: includeBody), status: 200)
        } catch {
            logger.error("/recordings: \(error)")
            connection.answer(RelayResponses.text(.serviceUnavailable, "503 the library cannot be read", includeBody: includeBody), status: 503)
        }
    }

    /// An indexed recording's file, whole or the range asked for; 404 for anything the shelf
    /// will not open (see `RecordingShelf.open`).
    private func sendRecording(_ id: Int64, head: HTTPRequestHead, connection: RelayConnectionHandler, includeBody: Bool) {
        guard let shelf else { return }
        guard fileTransfers < Self.maxFileTransfers else {
            connection.answer(RelayResponses.text(.serviceUnavailable, "503 too many recordings being sent", extraHeaders: ["Retry-After: 5"],
                                                  includeBody: includeBody), status: 503)
            return
        }
        guard let recording = shelf.open(id: id) else {
            connection.answer(RelayResponses.text(.notFound, "404 no such recording", includeBody: includeBody), status: 404)
            return
        }
        var lines = ["Content-Type: \(recording.contentType)", "Accept-Ranges: bytes", "Server: \(AirtapVersion.userAgent)",
                     "Cache-Control: no-cache", "X-Content-Type-Options: nosniff"]
        let status: HTTPResponseStatus
        let range: Range<Int>
        switch ByteRangeRequest(header: head.headers["Range"].first, size: recording.size) {
        case .unsatisfiable:
            close(recording.descriptor)
            connection.answer(RelayResponses.text(.rangeNotSatisfiable, "416 range not satisfiable",
                                                  extraHeaders: ["Content-Range: bytes */\(recording.size)"], includeBody: includeBody),
                              status: 416)
            return
        case .whole:
            status = .ok
            range = 0..<recording.size
        case .partial(let asked):
            status = .partialContent
            range = asked
            lines.append("Content-Range: bytes \(asked.lowerBound)-\(asked.upperBound - 1)/\(recording.size)")
        }
        lines.append("Content-Length: \(range.count)")
        lines.append("Connection: close")
        let text = (["HTTP/1.1 \(status.code) \(status.reasonPhrase)"] + lines).joined(separator: "\r\n") + "\r\n\r\n"
        connection.sendFile(recording, head: text, range: includeBody ? range : range.lowerBound..<range.lowerBound,
                            status: Int(status.code))
        if connection.sentFile { fileTransfers += 1 }
    }

    /// `http://host:port` as the client reached us (see `RelayResponses.streamURL`).
    private func baseURL(_ head: HTTPRequestHead, _ localAddress: SocketAddress?) -> String {
        RelayResponses.streamURL(hostHeader: head.headers["Host"].first, boundHost: localAddress?.ipAddress ?? configuration.host,
                                 boundPort: localAddress?.port ?? configuration.port, path: "")
    }

    private func streamURL(_ head: HTTPRequestHead, _ localAddress: SocketAddress?, index: Int) -> String {
        // A single station's playlists keep pointing at /stream, as they always did.
        let path = hubs.count == 1 ? "/stream" : "/" + RelayResponses.pathSegment(hubs[index].station.id)
        return baseURL(head, localAddress) + path
    }

    private func source(_ hub: RelayHub, base: String) -> IcecastStatus.Source {
        IcecastStatus.Source(
            mount: "/" + RelayResponses.pathSegment(hub.station.id),
            listenURL: base + "/" + RelayResponses.pathSegment(hub.station.id),
            name: hub.displayName, description: nil, genre: hub.stream.genre, url: hub.stream.url,
            contentType: hub.stream.contentType, codec: hub.codec,
            transcodedFrom: hub.station.transcode == nil ? nil : hub.sourceCodec, nowPlaying: hub.nowPlaying, listeners: hub.listenerCount,
            peakListeners: hub.counters.peakListeners, bitrate: hub.stream.bitrate, nominalBitrate: hub.nominalBitrate,
            sampleRate: hub.sampleRate,
            channels: hub.channels, streamStart: hub.streamStart, upstream: hub.upstream.name)
    }

    private func checkDeadlines(at now: NIODeadline) {
        connections.closeExpired(at: now, limits: limits) { id, connection, reason in
            if case .stalled = reason { logger.warning("listener #\(id) (\(connection.remote)) disconnected: \(reason)") }
        }
    }

    func shutdown() {
        if case .running(let tick) = state { tick?.cancel() }
        state = .stopped
        connections.closeAll(.serverShutdown)
    }

    // MARK: Status

    func status(of index: Int) -> RelayStatus {
        hubs[index].status(connections: counters, uptime: uptime)
    }

    /// One station: its status object, as `/status` always answered. Several: `{"stations": [...]}`.
    private func statusJSON() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let statuses = hubs.indices.map(status(of:))
        let data = statuses.count == 1 ? try? encoder.encode(statuses[0]) : try? encoder.encode(["stations": statuses])
        guard let data else { return "{}" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
