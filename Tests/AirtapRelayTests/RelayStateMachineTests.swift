@testable import AirtapRelay
import AirtapTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// The relay's pure parts, without sockets: the ring, one listener's lifecycle, routing, blocks.
@Suite("Relay: ring and listener state machine")
struct RelayStateMachineTests {
    static let frameSeconds = 0.026

    /// A ring holding `count` packets of `size` bytes, byte `i % 251` of packet `i` everywhere,
    /// so a test can tell packets apart by content.
    static func ring(count: Int, size: Int = 100, capacitySeconds: Double = 10, titleAt: [Int: String] = [:]) -> PacketRing {
        var ring = PacketRing(capacitySeconds: capacitySeconds, capacityBytes: 1 << 30)
        for index in 0..<count {
            if let title = titleAt[index] { ring.changeTitle(to: TitleBlock.render(title: title, url: nil)) }
            ring.append(audio: packet(index, size: size), duration: frameSeconds)
        }
        return ring
    }

    static func packet(_ index: Int, size: Int = 100) -> ByteBuffer {
        ByteBuffer(bytes: [UInt8](repeating: UInt8(index % 251), count: size))
    }

    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    static let limits = ListenerLimits(requestTimeout: .seconds(10), stallTimeout: .seconds(10))

    /// Everything the machine writes now, in order.
    static func drain(_ machine: inout ListenerStateMachine, _ ring: PacketRing) -> (bytes: [UInt8], skips: [Int], blocks: [[UInt8]]) {
        var bytes: [UInt8] = [], skips: [Int] = [], blocks: [[UInt8]] = []
        while let write = machine.nextWrite(from: ring) {
            switch write {
            case .audio(let buffer): bytes += Array(buffer.readableBytesView)
            case .metadata(let buffer):
                blocks.append(Array(buffer.readableBytesView))
                bytes += Array(buffer.readableBytesView)
            case .skippedAhead(let packets): skips.append(packets)
            case .end: break
            }
        }
        return (bytes, skips, blocks)
    }

    @Test("The ring keeps at most its capacity, by duration and by bytes, and always the newest packet")
    func ringCapacity() {
        var ring = Self.ring(count: 1000, capacitySeconds: 1)
        #expect(ring.seconds <= 1 + 1e-9)
        #expect(ring.count == Int(1 / Self.frameSeconds))
        #expect(ring.newestSequence == 999)
        #expect(ring.oldestSequence == 1000 - ring.count)

        var small = PacketRing(capacitySeconds: 100, capacityBytes: 1000)
        for index in 0..<50 { small.append(audio: Self.packet(index), duration: Self.frameSeconds) }
        #expect(small.byteCount == 1000)
        small.append(audio: Self.packet(50, size: 5000), duration: Self.frameSeconds)
        #expect(small.count == 1 && small.newestSequence == 50)
        ring = PacketRing(capacitySeconds: 1, capacityBytes: 1)
        #expect(ring.burstStart(seconds: 2) == 0)
    }

    @Test("A new listener starts at most the burst before the live edge, on a packet (frame) boundary")
    func burstStart() {
        let ring = Self.ring(count: 400)
        // 2 s at 26 ms per packet: the last 76 packets (76 × 26 ms = 1.976 s).
        #expect(ring.burstStart(seconds: 2) == 400 - 76)
        #expect(ring.burstStart(seconds: 0) == 399)
        #expect(ring.burstStart(seconds: 1000) == ring.oldestSequence)

        var machine = ListenerStateMachine(connectedAt: Self.t0)
        let start = machine.streamRequested(metaint: nil, ring: ring, burstSeconds: 2)
        #expect(start == .sendHead)
        let out = Self.drain(&machine, ring)
        #expect(out.bytes.count == 76 * 100)
        #expect(out.bytes.first == UInt8(324 % 251))
        #expect(out.bytes.last == UInt8(399 % 251))
        let after = machine.nextWrite(from: ring)
        #expect(after == nil)
    }

    @Test("Before any audio a listener waits; the first packet starts it")
    func waitsForAudio() {
        var ring = PacketRing(capacitySeconds: 10, capacityBytes: 1 << 20)
        var machine = ListenerStateMachine(connectedAt: Self.t0)
        let start = machine.streamRequested(metaint: nil, ring: ring, burstSeconds: 2)
        #expect(start == .nothing)
        #expect(machine.isListener && !machine.isStreaming)
        ring.append(audio: Self.packet(0), duration: Self.frameSeconds)
        let arrived = machine.audioArrived(ring: ring, burstSeconds: 2)
        #expect(arrived == .sendHead)
        #expect(Self.drain(&machine, ring).bytes == Array(Self.packet(0).readableBytesView))
    }

    @Test("Metadata: a block every metaint bytes, inside packets; the current title first, then only changes")
    func metadataInterleaving() throws {
        // 100-byte packets, metaint 250: blocks fall mid-packet and on packet boundaries.
        let ring = Self.ring(count: 12, titleAt: [0: "One", 5: "Two"])
        var machine = ListenerStateMachine(connectedAt: Self.t0)
        _ = machine.streamRequested(metaint: 250, ring: ring, burstSeconds: 100)
        let out = Self.drain(&machine, ring)
        // 1200 audio bytes + blocks after 250, 500, 750, 1000.
        #expect(out.blocks.count == 4)
        let one = Array(TitleBlock.render(title: "One", url: nil).readableBytesView)
        let two = Array(TitleBlock.render(title: "Two", url: nil).readableBytesView)
        // After 250 bytes (packet 2, title One): One. After 500 (packet 5 is next: Two, it changed
        // exactly at the boundary): Two. After 750, 1000: no change.
        #expect(out.blocks == [one, two, [0], [0]])
        // Removing the blocks gives back the packets, in order, whole.
        var audio = out.bytes
        var position = 0
        for block in out.blocks {
            position += 250
            audio.removeSubrange(position..<(position + block.count))
        }
        #expect(audio == (0..<12).flatMap { Array(Self.packet($0).readableBytesView) })
    }

    @Test("A listener without metadata gets whole packets only")
    func pureAudio() {
        let ring = Self.ring(count: 10, titleAt: [0: "One", 3: "Two"])
        var machine = ListenerStateMachine(connectedAt: Self.t0)
        _ = machine.streamRequested(metaint: nil, ring: ring, burstSeconds: 100)
        let out = Self.drain(&machine, ring)
        #expect(out.blocks.isEmpty)
        #expect(out.bytes == (0..<10).flatMap { Array(Self.packet($0).readableBytesView) })
    }

    @Test("A listener that fell out of the ring skips to the live edge; a packet begun is finished first")
    func skipAhead() {
        var ring = Self.ring(count: 10, capacitySeconds: 10 * Self.frameSeconds + 0.001)
        var machine = ListenerStateMachine(connectedAt: Self.t0)
        _ = machine.streamRequested(metaint: 150, ring: ring, burstSeconds: 100)
        // It takes packet 0 and half of packet 1 (up to the first block), then stops reading.
        let first = machine.nextWrite(from: ring)
        #expect(first == .audio(Self.packet(0)))
        let second = machine.nextWrite(from: ring)
        #expect(second == .audio(ByteBuffer(bytes: [UInt8](repeating: 1, count: 50))))
        for index in 10..<40 { ring.append(audio: Self.packet(index), duration: Self.frameSeconds) }
        #expect(ring.oldestSequence == 30)
        let out = Self.drain(&machine, ring)
        // The block, the rest of packet 1, then packet 39 (the live edge) on.
        #expect(out.skips == [37])
        #expect(out.bytes == [0] + [UInt8](repeating: 1, count: 50) + [UInt8](repeating: 39, count: 100))
        let after = machine.nextWrite(from: ring)
        #expect(after == nil)
    }

    @Test("A listener whose socket stays full past the stall timeout is closed; one that drains is not")
    func stall() {
        let ring = Self.ring(count: 5)
        var machine = ListenerStateMachine(connectedAt: Self.t0)
        _ = machine.streamRequested(metaint: nil, ring: ring, burstSeconds: 2)
        do { let action = machine.becameUnwritable(at: Self.t0); #expect(action == .nothing) }
        do { let action = machine.tick(at: Self.t0 + .seconds(9), limits: Self.limits); #expect(action == .nothing) }
        do { let action = machine.becameWritable(); #expect(action == .pump) }
        do { let action = machine.becameUnwritable(at: Self.t0 + .seconds(9)); #expect(action == .nothing) }
        do { let action = machine.tick(at: Self.t0 + .seconds(18), limits: Self.limits); #expect(action == .nothing) }
        do { let action = machine.tick(at: Self.t0 + .seconds(19), limits: Self.limits); #expect(action == .close(.stalled(seconds: 10))) }
        #expect(machine.stopReason == .stalled(seconds: 10))
        #expect(!machine.isListener)
        let after = machine.nextWrite(from: ring)
        #expect(after == nil)
        // Stopped, it does nothing more for the socket's news, and its end keeps the stall.
        do { let action = machine.becameWritable(); #expect(action == .nothing) }
        do { let action = machine.tick(at: Self.t0 + .seconds(60), limits: Self.limits); #expect(action == .nothing) }
        do { let action = machine.closed(); #expect(action == .forget(.stalled(seconds: 10))) }
    }

    @Test("A connection that never sends a request is closed after the request timeout")
    func requestTimeout() {
        var machine = ListenerStateMachine(connectedAt: Self.t0)
        do { let action = machine.tick(at: Self.t0 + .seconds(5), limits: Self.limits); #expect(action == .nothing) }
        do { let action = machine.tick(at: Self.t0 + .seconds(10), limits: Self.limits); #expect(action == .close(.requestTimeout)) }
        var answered = ListenerStateMachine(connectedAt: Self.t0)
        do { let action = answered.answered(status: 404); #expect(action == .answer) }
        do { let action = answered.tick(at: Self.t0 + .seconds(60), limits: Self.limits); #expect(action == .nothing) }
        #expect(answered.stopReason == .answered(status: 404))
    }

    @Test("Events return what the connection must do: waiting, streaming, pumping on new audio and on a drained socket")
    func actionsWhileStreaming() {
        var ring = PacketRing(capacitySeconds: 10, capacityBytes: 1 << 20)
        var machine = ListenerStateMachine(connectedAt: Self.t0)
        // Before its request, neither new audio nor the socket's news asks for anything.
        do { let action = machine.audioArrived(ring: Self.ring(count: 1), burstSeconds: 2); #expect(action == .nothing) }
        do { let action = machine.becameWritable(); #expect(action == .nothing) }
        do { let action = machine.streamRequested(metaint: nil, ring: ring, burstSeconds: 2); #expect(action == .nothing) }
        // An empty ring growing nothing starts nobody.
        do { let action = machine.audioArrived(ring: ring, burstSeconds: 2); #expect(action == .nothing) }
        ring.append(audio: Self.packet(0), duration: Self.frameSeconds)
        do { let action = machine.audioArrived(ring: ring, burstSeconds: 2); #expect(action == .sendHead) }
        // Once streaming, new audio and a drained socket each pump; a full one waits for the tick.
        ring.append(audio: Self.packet(1), duration: Self.frameSeconds)
        do { let action = machine.audioArrived(ring: ring, burstSeconds: 2); #expect(action == .pump) }
        do { let action = machine.becameUnwritable(at: Self.t0); #expect(action == .nothing) }
        do { let action = machine.becameWritable(); #expect(action == .pump) }
        // A second stream request on the same connection is not a new start.
        do { let action = machine.streamRequested(metaint: nil, ring: ring, burstSeconds: 2); #expect(action == .nothing) }
        #expect(Self.drain(&machine, ring).bytes.count == 200)
    }

    @Test("Stop while answering: the first reason stays, the connection is still closed, and it is forgotten for that reason")
    func stopWhileAnswering() {
        var machine = ListenerStateMachine(connectedAt: Self.t0)
        do { let action = machine.answered(status: 200); #expect(action == .answer) }
        // A second answer (a late error on the same connection) writes nothing.
        do { let action = machine.answered(status: 400); #expect(action == .nothing) }
        // The server shuts down while the answer is still going out: closed, for the answer's reason.
        do { let action = machine.stop(.serverShutdown); #expect(action == .close(.answered(status: 200))) }
        do { let action = machine.closed(); #expect(action == .forget(.answered(status: 200))) }
        #expect(machine.stopReason == .answered(status: 200))
        // Nor does a streaming listener get an answer: it is already under way.
        var listener = ListenerStateMachine(connectedAt: Self.t0)
        _ = listener.streamRequested(metaint: nil, ring: Self.ring(count: 3), burstSeconds: 2)
        do { let action = listener.answered(status: 503); #expect(action == .nothing) }
        #expect(listener.isStreaming)
    }

    @Test("Stop and close: the server's reason wins over the client's closing, the client's when it closed first; both free a listener slot")
    func stopAndClose() {
        var stopped = ListenerStateMachine(connectedAt: Self.t0)
        _ = stopped.streamRequested(metaint: nil, ring: Self.ring(count: 3), burstSeconds: 2)
        #expect(stopped.isListener)
        do { let action = stopped.stop(.serverShutdown); #expect(action == .close(.serverShutdown)) }
        #expect(!stopped.isListener)
        do { let action = stopped.closed(); #expect(action == .forget(.serverShutdown)) }

        var left = ListenerStateMachine(connectedAt: Self.t0)
        _ = left.streamRequested(metaint: nil, ring: PacketRing(capacitySeconds: 1, capacityBytes: 1000), burstSeconds: 2)
        #expect(left.isListener)
        do { let action = left.closed(); #expect(action == .forget(.clientClosed)) }
        #expect(!left.isListener && !left.isAwaitingRequest)
        do { let action = left.audioArrived(ring: Self.ring(count: 1), burstSeconds: 2); #expect(action == .nothing) }
        do { let action = left.tick(at: Self.t0 + .seconds(60), limits: Self.limits); #expect(action == .nothing) }
    }

    @Test("Limits: the request timeout applies only before a request, the stall timeout only while streaming and blocked")
    func limits() {
        // A listener waiting for upstream audio is neither pending nor stalled, however long it waits.
        var waiting = ListenerStateMachine(connectedAt: Self.t0)
        _ = waiting.streamRequested(metaint: nil, ring: PacketRing(capacitySeconds: 1, capacityBytes: 1000), burstSeconds: 2)
        do { let action = waiting.becameUnwritable(at: Self.t0); #expect(action == .nothing) }
        do { let action = waiting.tick(at: Self.t0 + .seconds(3600), limits: Self.limits); #expect(action == .nothing) }
        // A streaming listener that keeps taking data is never closed.
        var reading = ListenerStateMachine(connectedAt: Self.t0)
        _ = reading.streamRequested(metaint: nil, ring: Self.ring(count: 3), burstSeconds: 2)
        do { let action = reading.tick(at: Self.t0 + .seconds(3600), limits: Self.limits); #expect(action == .nothing) }
        // The stall counts from the first time the socket filled, not from later reports of it.
        do { let action = reading.becameUnwritable(at: Self.t0 + .seconds(3600)); #expect(action == .nothing) }
        do { let action = reading.becameUnwritable(at: Self.t0 + .seconds(3605)); #expect(action == .nothing) }
        let action = reading.tick(at: Self.t0 + .seconds(3610), limits: Self.limits)
        #expect(action == .close(.stalled(seconds: 10)))
    }

    @Test("Routes: the stream under /, /stream, /<id>, /;; status, Icecast status, metrics, the page, playlists; 404 and 405 otherwise")
    func routes() {
        func route(_ method: HTTPMethod, _ uri: String, browser: Bool = false) -> RelayRoute {
            RelayRoute(method: method, uri: uri, stationIDs: ["demo"], wantsPage: browser)
        }
        #expect(route(.GET, "/") == .stream(0))
        #expect(route(.GET, "/", browser: true) == .page)
        #expect(route(.GET, "/stream?type=.mp3") == .stream(0))
        #expect(route(.HEAD, "/demo") == .stream(0))
        #expect(route(.GET, "/;stream.mp3") == .stream(0))
        #expect(route(.GET, "/status") == .status)
        #expect(route(.GET, "/status-json.xsl") == .icestats)
        #expect(route(.GET, "/metrics") == .metrics)
        #expect(route(.GET, "/listen.pls") == .playlistPLS(0))
        #expect(route(.GET, "/listen.m3u") == .playlistM3U(0))
        #expect(route(.GET, "/other") == .notFound)
        #expect(route(.GET, "/../etc/passwd") == .notFound)
        #expect(route(.POST, "/stream") == .methodNotAllowed)
        #expect(route(.PUT, "/") == .methodNotAllowed)
    }

    @Test("Several stations: each at /<id> (percent-encoded ids too), / is the page, reserved paths win over ids")
    func routesForSeveralStations() {
        func route(_ uri: String) -> RelayRoute {
            RelayRoute(method: .GET, uri: uri, stationIDs: ["groovesalad", "kexp", "late night", "metrics"])
        }
        #expect(route("/") == .page)
        #expect(route("/stream") == .stream(0))
        #expect(route("/kexp") == .stream(1))
        #expect(route("/late%20night") == .stream(2))
        #expect(route("/kexp.pls") == .playlistPLS(1))
        #expect(route("/kexp.m3u") == .playlistM3U(1))
        #expect(route("/metrics") == .metrics)
        #expect(route("/kexp2") == .notFound)
        #expect(route("/late%2") == .notFound)
    }

    @Test("Page and metrics escape what stations send")
    func escaping() {
        #expect(RelayPage.escape(#"<script>alert("x")</script> & 'q'"#) == "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;")
        #expect(RelayPage.escape("a\u{1B}[2Jb") == "a&#xFFFD;[2Jb")
        #expect(PrometheusText.label("a\"b\\c\nd") == #"a\"b\\c\nd"#)
        #expect(RelayResponses.pathSegment("late night/ü") == "late%20night%2F%C3%BC")
    }

    @Test("Title blocks: length byte, padded to 16, raw UTF-8; over-long titles cut at a character")
    func titleBlocks() {
        let block = Array(TitleBlock.render(title: "Sœur's Song; Part=2", url: "http://x").readableBytesView)
        let text = "StreamTitle='Sœur's Song; Part=2';StreamUrl='http://x';"
        #expect(Int(block[0]) * 16 == block.count - 1)
        #expect(Array(block[1...].prefix(text.utf8.count)) == Array(text.utf8))
        #expect(block[(1 + text.utf8.count)...].allSatisfy { $0 == 0 })

        let long = Array(TitleBlock.render(title: String(repeating: "é", count: 5000), url: nil).readableBytesView)
        #expect(long[0] == 255 && long.count == 1 + 4080)
        #expect(String(validating: long[1...].prefix { $0 != 0 }, as: UTF8.self)?.hasSuffix("é';") == true)
    }
}

