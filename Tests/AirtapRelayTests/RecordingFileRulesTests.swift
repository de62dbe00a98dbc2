@testable import AirtapRelay
import AirtapTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// The rules behind `/recordings`, without sockets: routes, byte ranges, a file transfer's lifecycle.
@Suite("Relay: recordings routes, ranges and file transfers")
struct RecordingFileRulesTests {
    @Test("/recordings and /recordings/file/<digits> route only when a library is served; anything but digits is 404")
    func routes() {
        func route(_ uri: String, library: Bool = true, method: HTTPMethod = .GET) -> RelayRoute {
            RelayRoute(method: method, uri: uri, stationIDs: ["recordings", "demo"], servesRecordings: library)
        }
        #expect(route("/recordings") == .recordings)
        #expect(route("/recordings?q=björk") == .recordings)
        #expect(route("/recordings/file/42") == .recordingFile(42))
        #expect(route("/recordings/file/42", method: .HEAD) == .recordingFile(42))
        for uri in ["/recordings/file/", "/recordings/file/-1", "/recordings/file/4a", "/recordings/file/../x",
                    "/recordings/file/%2Fetc%2Fpasswd", "/recordings/file/99999999999999999999", "/recordings/file/1/2"] {
            #expect(route(uri) == .notFound, "\(uri)")
        }
        // Without a library the station of that id keeps its mount, and the files do not exist.
        #expect(route("/recordings", library: false) == .stream(0))
        #expect(route("/recordings/file/42", library: false) == .notFound)
        #expect(RelayRoute.queryValue("q", in: "/recordings?x=1&q=Guns+N%27+Roses") == "Guns N' Roses")
        #expect(RelayRoute.queryValue("q", in: "/recordings") == nil)
    }

    @Test("Range headers: one range of a file, a suffix, an open end; past the end unsatisfiable; anything else the whole file")
    func ranges() {
        #expect(ByteRangeRequest(header: nil, size: 1000) == .whole)
        #expect(ByteRangeRequest(header: "bytes=0-99", size: 1000) == .partial(0..<100))
        #expect(ByteRangeRequest(header: "bytes=900-", size: 1000) == .partial(900..<1000))
        #expect(ByteRangeRequest(header: "bytes=900-5000", size: 1000) == .partial(900..<1000))
        #expect(ByteRangeRequest(header: "bytes=-10", size: 1000) == .partial(990..<1000))
        #expect(ByteRangeRequest(header: "bytes=-5000", size: 1000) == .partial(0..<1000))
        #expect(ByteRangeRequest(header: "bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(ByteRangeRequest(header: "bytes=-0", size: 1000) == .unsatisfiable)
        #expect(ByteRangeRequest(header: "bytes=0-", size: 0) == .unsatisfiable)
        for header in ["bytes=5-1", "bytes=0-1,5-6", "items=0-1", "bytes=a-b", "bytes=-", "bytes=99999999999999999999-"] {
            #expect(ByteRangeRequest(header: header, size: 1000) == .whole, "\(header)")
        }
    }

    @Test("A file transfer: chunks in order up to the range's end, then answered; paced by writability; a stuck one stalls out")
    func transfer() {
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let limits = ListenerLimits(requestTimeout: .seconds(10), stallTimeout: .seconds(10))
        var machine = ListenerStateMachine(connectedAt: t0)
        #expect(machine.fileRequested(range: 100..<250, status: 206) == .pumpFile)
        #expect(!machine.isAwaitingRequest && !machine.isListener)
        #expect(machine.nextFileStep(maxBytes: 64) == .send(offset: 100, count: 64))
        #expect(machine.becameUnwritable(at: t0) == .nothing)
        #expect(machine.tick(at: t0 + .seconds(5), limits: limits) == .nothing)
        #expect(machine.becameWritable() == .pumpFile)
        #expect(machine.nextFileStep(maxBytes: 64) == .send(offset: 164, count: 64))
        #expect(machine.nextFileStep(maxBytes: 64) == .send(offset: 228, count: 22))
        #expect(machine.nextFileStep(maxBytes: 64) == .finished)
        #expect(machine.stopReason == .answered(status: 206))
        #expect(machine.nextFileStep(maxBytes: 64) == .none)
        #expect(machine.fileRequested(range: 0..<1, status: 200) == .nothing)

        // A HEAD: nothing to send, finished at the first step.
        var head = ListenerStateMachine(connectedAt: t0)
        #expect(head.fileRequested(range: 0..<0, status: 200) == .pumpFile)
        #expect(head.nextFileStep(maxBytes: 64) == .finished)

        var stuck = ListenerStateMachine(connectedAt: t0)
        _ = stuck.fileRequested(range: 0..<1_000_000, status: 200)
        _ = stuck.nextFileStep(maxBytes: 65536)
        _ = stuck.becameUnwritable(at: t0)
        #expect(stuck.tick(at: t0 + .seconds(10), limits: limits) == .close(.stalled(seconds: 10)))
        #expect(stuck.nextFileStep(maxBytes: 64) == .none)
    }
}
