import AirtapKit
import FoundationEssentials
import ICYWire
import Locking
import Logging
import ShoutSource

/// `relay --to icecast://...`: sends the station's audio frames to an Icecast mount (or a
/// SHOUTcast v1 server) as its source client, and each title change as the server's metadata
/// update, so the server's own listeners see it.
///
/// libshout's calls block, so this sink runs behind its own `QueuedSink` (made by
/// `makeSink`), never on the ingest thread; `IcecastPushMachine` decides, this performs.
package final class IcecastPush: StreamSink {
    /// Packets allowed to wait for a slow server before newer ones are dropped (about 50 s).
    static let backlogPackets = 2000

    private let core: Locked<Core>

    init(target: IcecastTarget, password: String, userAgent: String, retries: ReconnectPolicy, logger: Logger,
         stop: @escaping @Sendable (StopReason) -> Void) {
        core = Locked(Core(target: target, password: password, userAgent: userAgent,
                           machine: IcecastPushMachine(target: target.description, policy: retries),
                           logger: logger, stop: stop))
    }

    /// The push for `target`, behind its own queue. `retries`: when to connect again after the
    /// server refuses or drops the push (`maxRetries` 0: the first failure ends the relay).
    package static func makeSink(_ target: IcecastTarget, password: String, userAgent: String, retries: ReconnectPolicy,
                                logger: Logger, stop: @escaping @Sendable (StopReason) -> Void) -> QueuedSink {
        QueuedSink(IcecastPush(target: target, password: password, userAgent: userAgent, retries: retries, logger: logger, stop: stop),
                   label: "relay.icecast", policy: .dropPackets(beyond: backlogPackets))
    }

    package func receive(_ event: StreamEvent) throws {
        core.withLock { $0.handle(event) }
    }

    /// Packets dropped while no connection was up (between a failure and the next attempt).
    package var droppedWhileDisconnected: Int { core.withLock { $0.dropped } }

    struct Core {
        let target: IcecastTarget
        let password: String
        let userAgent: String
        var machine: IcecastPushMachine
        let logger: Logger
        let stop: @Sendable (StopReason) -> Void
        let clock = ContinuousClock()
        let start: ContinuousClock.Instant
        var random = SystemRandomNumberGenerator()

        var connection: ShoutConnection?
        var head: ResponseHead?
        var format: ShoutConnection.StreamInfo.Format?
        var bitrateKbps: Int?
        /// The title in effect, sent again after every reconnect.
        var title: String?
        var dropped = 0
        /// Ogg: see `keepLinkHeaders`.
        var linkHeaders: [[UInt8]] = []
        var linkHeaderBytes = 0
        /// Ogg, after a (re)connection mid-link: audio pages wait for one that starts a packet.
        var awaitsPacketStart = false

        init(target: IcecastTarget, password: String, userAgent: String, machine: IcecastPushMachine, logger: Logger,
             stop: @escaping @Sendable (StopReason) -> Void) {
            self.target = target
            self.password = password
            self.userAgent = userAgent
            self.machine = machine
            self.logger = logger
            self.stop = stop
            start = clock.now
        }

        private var now: Double { (clock.now - start).seconds }

        mutating func handle(_ event: StreamEvent) {
            switch event {
            case .head(let streamHead):
                head = streamHead.response
            case .format(let header):
                switch header.codec {
                case .mp3, .mp2, .mp1:
                    format = .mp3
                    bitrateKbps = header.bitrate.map { $0 / 1000 }
                case .aac:
                    // libshout 2.4 knows Ogg, MP3 and WebM only: it would announce AAC as audio/mpeg.
                    fail(.stream(url: target.description, reason: "libshout cannot send AAC streams to Icecast; relay them to a file or with serve"))
                case .vorbis, .opus:
                    // Pages pass through as they are: a title is a new link, which carries it.
                    format = .ogg
                    bitrateKbps = header.bitrate.map { $0 / 1000 }
                }
            case .packet(let packet):
                keepLinkHeaders(packet)
                send(packet)
            case .metadata(let change):
                title = change.info.raw
                sendTitle()
            case .discontinuity, .connection:
                break
            case .ended:
                connection?.close()
                connection = nil
                machine.finish()
            }
        }

        /// Ogg: the current link's header pages, kept to start every (re)connection with, so the
        /// server's listeners can decode what follows. A new link (BOS) starts a new set.
        private mutating func keepLinkHeaders(_ packet: Packet) {
            guard packet.header.isStreamHeader else { return }
            if packet.header.startsLink {
                linkHeaders.removeAll()
                linkHeaderBytes = 0
            }
            // Header packets are bounded by the framer (1 MiB a link); so is what is kept here.
            guard linkHeaderBytes + packet.bytes.count <= Self.maxLinkHeaderBytes else { return }
            linkHeaders.append(Array(packet.bytes))
            linkHeaderBytes += packet.bytes.count
        }

        static let maxLinkHeaderBytes = 1 << 20

        private mutating func send(_ packet: Packet) {
            switch machine.packet(now: now) {
            case .drop:
                dropped += 1
                return
            case .connectAndSend:
                guard connect() else { dropped += 1; return }
                if format == .ogg {
                    // A connection mid-link starts with the link's headers (a header page in
                    // progress is the last of them), then audio from a page that starts a packet.
                    for header in linkHeaders where connection != nil { sendBytes(header[...]) }
                    if packet.header.isStreamHeader { return }
                    awaitsPacketStart = true
                }
            case .send:
                break
            }
            if awaitsPacketStart, !packet.header.isStreamHeader {
                guard !packet.header.continuesPacket else { dropped += 1; return }
                awaitsPacketStart = false
            }
            sendBytes(packet.bytes)
        }

        private mutating func sendBytes(_ bytes: ArraySlice<UInt8>) {
            guard let connection else { return }
            var failure: ShoutConnection.ShoutError?
            bytes.withUnsafeBytes { raw in
                do throws(ShoutConnection.ShoutError) { try connection.send(raw) } catch { failure = error }
            }
            if let failure {
                self.connection = nil
                handleFailure(failure)
            }
        }

        /// True once the mount is ours.
        private mutating func connect() -> Bool {
            guard let format else { return false }
            do throws(ShoutConnection.ShoutError) {
                let info = ShoutConnection.StreamInfo(format: format, name: head?.icyName, genre: head?.icyGenre,
                                                      url: head?.icyURL, bitrateKbps: bitrateKbps, userAgent: userAgent)
                let connection = try ShoutConnection(server: target.server, password: password, info: info)
                try connection.open()
                self.connection = connection
                machine.connected(now: now)
                logger.info("sending to \(target)")
                sendTitle()
                return true
            } catch {
                handleFailure(error)
                return false
            }
        }

        private mutating func sendTitle() {
            guard let connection, let title, format == .mp3 else { return }
            do throws(ShoutConnection.ShoutError) {
                try connection.setTitle(title)
            } catch {
                // The audio goes on; the server's listeners keep the previous title.
                logger.warning("\(target): the title update failed: \(error)")
            }
        }

        private mutating func handleFailure(_ failure: ShoutConnection.ShoutError) {
            switch machine.failed(failure, now: now, random: &random) {
            case .retry(let retry):
                logger.warning("\(retry.message)")
            case .stop(let error):
                fail(error)
            }
        }

        private mutating func fail(_ error: AirtapError) {
            connection?.close()
            connection = nil
            machine.finish()
            stop(.error(error))
        }
    }
}
