import AirtapIngest
import AirtapKit
import AirtapSupport
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
final class IcecastPush: StreamSink {
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
    package var droppedWhileDisconnected: Int { core.withLock { $0.machine.dropped } }

    /// Performs what `IcecastPushMachine` decides. Its own fields are the connection handle
    /// (open exactly while the machine streams) and what the server is told the stream is.
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
        var bitrateKbps: Int?

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
                    machine.formatKnown(.mp3)
                    bitrateKbps = header.bitrate.map { $0 / 1000 }
                case .aac:
                    // libshout 2.4 knows Ogg, MP3 and WebM only: it would announce AAC as audio/mpeg.
                    fail(.stream(url: target.description, reason: "libshout cannot send AAC streams to Icecast; relay them to a file or with serve"))
                case .vorbis, .opus:
                    // Pages pass through as they are: a title is a new link, which carries it.
                    machine.formatKnown(.ogg)
                    bitrateKbps = header.bitrate.map { $0 / 1000 }
                }
            case .packet(let packet):
                send(packet)
            case .metadata(let change):
                if case .send(let title) = machine.titleChanged(change.info.raw) { sendTitle(title) }
            case .discontinuity, .connection:
                break
            case .ended:
                machine.stop()
                disconnect()
            }
        }

        /// What the machine needs to know of a packet: the packet says it, whatever carried it.
        private static func kind(of packet: Packet) -> IcecastPushMachine.PacketKind {
            let header = packet.header
            guard header.codec.isChained else { return .frame }
            return header.isStreamHeader ? .oggHeader(startsLink: header.startsLink) : .oggAudio(continuesPacket: header.continuesPacket)
        }

        private mutating func send(_ packet: Packet) {
            switch machine.packet(Self.kind(of: packet), bytes: packet.bytes, now: now) {
            case .drop:
                return
            case .send:
                sendBytes(packet.bytes)
            case .connect(let format):
                guard let resume = connect(format) else { return }
                if let title = resume.title { sendTitle(title) }
                for header in resume.linkHeaders {
                    guard sendBytes(header[...]) else { return }
                }
                if resume.sendsPacket { sendBytes(packet.bytes) }
            }
        }

        /// False when the send failed (the machine has been told).
        @discardableResult
        private mutating func sendBytes(_ bytes: ArraySlice<UInt8>) -> Bool {
            guard let connection else { return false }
            var failure: ShoutConnection.ShoutError?
            bytes.withUnsafeBytes { raw in
                do throws(ShoutConnection.ShoutError) { try connection.send(raw) } catch { failure = error }
            }
            guard let failure else { return true }
            self.connection = nil
            handleFailure(failure)
            return false
        }

        /// What to send first once the mount is ours; nil when the connection failed (the
        /// machine has been told).
        private mutating func connect(_ format: ShoutConnection.StreamInfo.Format) -> IcecastPushMachine.Resume? {
            do throws(ShoutConnection.ShoutError) {
                let info = ShoutConnection.StreamInfo(format: format, name: head?.icyName, genre: head?.icyGenre,
                                                      url: head?.icyURL, bitrateKbps: bitrateKbps, userAgent: userAgent)
                let connection = try ShoutConnection(server: target.server, password: password, info: info)
                try connection.open()
                self.connection = connection
                let resume = machine.connected(now: now)
                logger.info("sending to \(target)")
                return resume
            } catch {
                handleFailure(error)
                return nil
            }
        }

        private func sendTitle(_ title: String) {
            guard let connection else { return }
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
            machine.stop()
            disconnect()
            stop(.error(error))
        }

        private mutating func disconnect() {
            connection?.close()
            connection = nil
        }
    }
}
