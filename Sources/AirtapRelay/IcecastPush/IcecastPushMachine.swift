import AirtapIngest
import AirtapKit
import AirtapSupport
import ICYWire
import ShoutSource

/// The rules of pushing a stream to an Icecast mount, apart from libshout and clocks: when to
/// connect, what a failure means, when to try again, and what a new connection starts with.
/// `IcecastPush` performs its answers and holds nothing of its own but the connection handle.
///
/// ```
/// waitingForAudio --packet--> connecting(packet) --ok--> streaming --send fails--+
///        |                          |                                            |
///        |                          +--fails--+                                  |
///        |                                    v                                  v
///        +----------------------------> waitingToRetry(at) <-------- (the policy allows)
///                                             | packet at or after `at`: connect again
///                                             v
///                          stopped (no retries left, or the stream ended)
/// ```
/// Packets that arrive while no connection is up are dropped: a relay resumes where the
/// upstream is now, it never queues up the past.
struct IcecastPushMachine {
    enum State: Sendable, Hashable {
        case waitingForAudio
        /// `packet` asked the engine to connect; this packet's fate waits for the answer.
        case connecting(PacketKind)
        /// `awaitsPacketStart`: Ogg after a (re)connection, audio pages wait for one that
        /// starts a packet (a page continuing one cannot be decoded without its start).
        case streaming(since: Double, awaitsPacketStart: Bool)
        case waitingToRetry(at: Double)
        case stopped
    }

    /// What the push needs to know of a packet: Ogg pages are resent and held back by rule.
    enum PacketKind: Sendable, Hashable {
        /// An MPEG audio frame: any one can start a connection.
        case frame
        case oggHeader(startsLink: Bool)
        case oggAudio(continuesPacket: Bool)
    }

    enum PacketAction: Sendable, Hashable {
        /// Connect, announcing this format, then send what `connected(now:)` answers.
        case connect(ShoutConnection.StreamInfo.Format)
        case send
        case drop
    }

    /// What a new connection sends first, in order.
    struct Resume: Sendable, Hashable {
        /// MP3: the title in effect (Ogg carries its titles in its links).
        var title: String?
        /// Ogg: the current link's header pages, so the server's listeners can decode what
        /// follows (a header page in progress is the last of them).
        var linkHeaders: [[UInt8]]
        /// Whether the packet that brought the connection up goes out after them: not a header
        /// page (already among them), not an audio page that continues a packet.
        var sendsPacket: Bool
    }

    enum TitleAction: Sendable, Hashable {
        /// Tell the server now.
        case send(String)
        /// Kept for the next connection (or never sent: Ogg, or no connection yet).
        case keep
    }

    /// A failure the push survives: say why, then connect again with the first packet `delay`
    /// seconds from now.
    struct Retry: Sendable, Hashable {
        let attempt: Int
        let delay: Double
        /// What went wrong, naming the server (once).
        let reason: AirtapError

        /// The warning the push logs.
        var message: String { "\(reason); trying again in \(delay.formatted(decimals: 1)) s (attempt \(attempt))" }
    }

    enum FailureAction: Sendable, Hashable {
        case retry(Retry)
        case stop(AirtapError)
    }

    private(set) var state: State = .waitingForAudio
    /// What libshout is told the stream is; nil until the ingest said.
    private var format: ShoutConnection.StreamInfo.Format?
    /// The title in effect, sent again after every reconnect.
    private(set) var title: String?
    /// Packets dropped while no connection was up (between a failure and the next attempt).
    private(set) var dropped = 0
    /// Ogg: the current link's header pages, to start every (re)connection with. A new link
    /// (BOS) starts a new set; bounded like the framer's header packets (1 MiB a link).
    private(set) var linkHeaders = OggLinkHeaders()
    /// `maxRetries` nil: forever; 0: the first failure ends the push. `retriesBeforeFirstAudio`
    /// false: a first connection that fails ends the push at once; true: a server that cannot be
    /// reached yet (still starting) is tried again by the policy. A first refused login (a wrong
    /// password, a mount another source holds) ends it at once either way.
    let policy: ReconnectPolicy
    let target: String
    private var progress = ReconnectPolicy.Progress()
    private var hasHeldTheMount = false
    /// When the mount was last lost: a refused login soon after is the server still holding it.
    private var mountLostAt: Double?

    /// How long after losing the mount a refused login counts as the server's passing state.
    /// Icecast keeps a source's mount until a read from it has waited `source-timeout` (10 s by
    /// default; raised on servers with slow sources), so a reconnect that comes sooner is
    /// refused. Six times the default covers a raised timeout and spans five backoff steps
    /// (1 + 2 + 4 + 8 + 16 s); a refusal later than that is the server's answer (a changed
    /// password, a mount another source now holds), not a state that passes.
    static let mountReleaseGrace: Double = 60

    init(target: String, policy: ReconnectPolicy) {
        self.target = target
        self.policy = policy
    }

    // MARK: Events

    mutating func formatKnown(_ format: ShoutConnection.StreamInfo.Format) {
        self.format = format
    }

    mutating func titleChanged(_ title: String) -> TitleAction {
        self.title = title
        guard case .streaming = state, format == .mp3 else { return .keep }
        return .send(title)
    }

    mutating func packet(_ kind: PacketKind, bytes: ArraySlice<UInt8>, now: Double) -> PacketAction {
        if case .oggHeader(let startsLink) = kind { linkHeaders.add(bytes, startsLink: startsLink) }
        switch state {
        case .waitingToRetry(let at) where now < at:
            return drop()
        case .waitingForAudio, .waitingToRetry:
            // Without a format the server cannot be told what the stream is.
            guard let format else { return drop() }
            state = .connecting(kind)
            return .connect(format)
        case .streaming(let since, let awaitsPacketStart):
            return streamingAction(kind, since: since, awaitsPacketStart: awaitsPacketStart)
        case .connecting, .stopped:
            return drop()
        }
    }

    /// The mount is ours: what to send before the stream goes on.
    mutating func connected(now: Double) -> Resume {
        let pending: PacketKind? = if case .connecting(let kind) = state { kind } else { nil }
        guard state != .stopped else { return Resume(title: nil, linkHeaders: [], sendsPacket: false) }
        hasHeldTheMount = true
        guard format == .ogg else {
            state = .streaming(since: now, awaitsPacketStart: false)
            return Resume(title: title, linkHeaders: [], sendsPacket: pending != nil)
        }
        // A connection mid-link starts with the link's headers, then audio from a page that
        // starts a packet.
        state = .streaming(since: now, awaitsPacketStart: true)
        let sendsPacket = switch pending {
        case .oggHeader?, nil: false
        case let kind?: streamingAction(kind, since: now, awaitsPacketStart: true) == .send
        }
        return Resume(title: nil, linkHeaders: linkHeaders.pages, sendsPacket: sendsPacket)
    }

    mutating func failed(_ failure: ShoutConnection.ShoutError, now: Double,
                         random: inout some RandomNumberGenerator) -> FailureAction {
        let streamedFor: Double = if case .streaming(let since, _) = state { now - since } else { 0 }
        if case .streaming = state { mountLostAt = now }
        // The packet that asked for the connection never went out.
        if case .connecting = state { dropped += 1 }
        let error = Self.error(for: failure, target: target)
        guard state != .stopped, let kind = kind(of: failure.kind, now: now) else {
            state = .stopped
            return .stop(error)
        }
        switch policy.decide(after: kind, streamedFor: streamedFor, progress: &progress, random: &random) {
        case .retry(let attempt, let delay):
            state = .waitingToRetry(at: now + delay)
            return .retry(Retry(attempt: attempt, delay: delay, reason: error))
        case .giveUp:
            state = .stopped
            return .stop(error)
        }
    }

    /// The stream ended, or the push failed for good: nothing more is sent.
    mutating func stop() {
        state = .stopped
    }

    // MARK: Rules

    private mutating func drop() -> PacketAction {
        dropped += 1
        return .drop
    }

    /// While streaming: everything goes, but Ogg audio waits for a page that starts a packet.
    private mutating func streamingAction(_ kind: PacketKind, since: Double, awaitsPacketStart: Bool) -> PacketAction {
        guard awaitsPacketStart, case .oggAudio(let continuesPacket) = kind else { return .send }
        guard !continuesPacket else { return drop() }
        state = .streaming(since: since, awaitsPacketStart: false)
        return .send
    }

    /// How the policy should count a failure; nil when it ends the push at once.
    private func kind(of failure: ShoutConnection.ShoutError.Kind, now: Double) -> ReconnectPolicy.Failure? {
        switch failure {
        case .cannotConnect, .disconnected:
            // A server that is away (restarting, or not up yet beside airtap) comes back.
            return hasHeldTheMount || policy.retriesBeforeFirstAudio ? .transient : nil
        case .loginRefused:
            // Refused while the server may still hold the mount we lost: it frees it soon.
            // Otherwise it is the server's answer: a wrong password or a mount that is taken.
            guard let mountLostAt, now - mountLostAt <= Self.mountReleaseGrace else { return nil }
            return .transient
        case .configuration:
            // A setting libshout refused rarely heals: a few tries once it had worked, none before.
            return hasHeldTheMount ? .clientError : nil
        }
    }

    /// One line a user can act on, for each way the server says no.
    static func error(for failure: ShoutConnection.ShoutError, target: String) -> AirtapError {
        let reason = switch failure.kind {
        case .cannotConnect: "cannot connect to the server (\(failure.detail))"
        case .loginRefused: "the server refused the source login: a wrong password, or the mount is already in use (\(failure.detail))"
        case .disconnected: "the server closed the source connection (\(failure.detail))"
        case .configuration: failure.detail
        }
        return .network(url: target, reason: reason)
    }
}
