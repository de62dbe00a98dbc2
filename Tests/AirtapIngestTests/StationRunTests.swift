import AirtapIngest
import AirtapKit
import AirtapStations
import AirtapSupport
import AirtapTestSupport
import CurlSource
import Locking
import Logging
import TestStation
import Testing

/// `StationRun`, the skeleton every streaming command uses, against the real test station.
/// (Its signals are tested through the commands, in child processes: trapping them here would
/// leave the test process ignoring Ctrl-C.)
@Suite("A run of sessions: the limit and a stop")
struct StationRunTests {
    static func sessions(_ count: Int, server: TestStationServer, loop: CurlMultiLoop) -> [(StationSession, CollectingSink)] {
        (0..<count).map { index in
            let events = CollectingSink()
            let station = Station(id: "s\(index)", name: "Station \(index)", urls: [server.streamURL])
            return (StationSession(station: station, loop: loop, options: IngestOptions(), sinks: [events], logger: Logger(label: "test")),
                    events)
        }
    }

    @Test("--for: every session stops with limitReached once the limit passed, after audio arrived")
    func limit() async throws {
        let server = try await TestStationServer.start(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime))
        defer { Task { try? await server.stop() } }
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let pairs = Self.sessions(3, server: server, loop: loop)
        let run = StationRun(sessions: pairs.map(\.0), loop: loop)
        run.start(limit: nil)
        // The limit is set once every session has audio: a session it stops before any arrived
        // ends with "no answer", rightly, and how soon audio comes is the machine's business.
        let deadline = ContinuousClock.now + .seconds(120)
        while pairs.contains(where: { $0.1.packets.isEmpty }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let limited = ContinuousClock.now
        run.limit(after: 2)
        let reasons = await run.stopped()
        run.finish()
        #expect(reasons == [.limitReached, .limitReached, .limitReached])
        #expect(ContinuousClock.now - limited >= .seconds(2))
        for (_, events) in pairs {
            #expect(!events.packets.isEmpty)
            #expect(events.endReason == .limitReached)
        }
    }

    @Test("stop: the job's own stop runs for every session (play's stops its player too)")
    func customStop() async throws {
        let server = try await TestStationServer.start(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime))
        defer { Task { try? await server.stop() } }
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let pairs = Self.sessions(2, server: server, loop: loop)
        let stopsSeen = Locked<[StopReason]>([])
        let sessions = pairs.map(\.0)
        let run = StationRun(sessions: sessions, loop: loop) { reason in
            stopsSeen.withLock { $0.append(reason) }
            for session in sessions { session.stop(reason) }
        }
        run.start(limit: nil)
        try await waitFor("audio on both sessions") { pairs.allSatisfy { !$0.1.packets.isEmpty } }
        run.stop(.userRequest)
        #expect(await run.stopped() == [.userRequest, .userRequest])
        run.finish()
        #expect(stopsSeen.withLock { $0 } == [.userRequest])
    }

    @Test("serve's rule: the first session to fail stops the others and is the error; none failing, nil")
    func firstError() async throws {
        let server = try await TestStationServer.start(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime))
        defer { Task { try? await server.stop() } }
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let good = Self.sessions(1, server: server, loop: loop)[0]
        // Port 9 (discard) refuses on this machine; no reconnect policy: the first failure ends it.
        let wrong = Station(id: "wrong", name: "Wrong", urls: ["http://127.0.0.1:9/stream"])
        let bad = StationSession(station: wrong, loop: loop, options: IngestOptions(), sinks: [], logger: Logger(label: "test"))
        let run = StationRun(sessions: [good.0, bad], loop: loop)
        run.start(limit: nil)
        let error = await run.stoppedAtFirstError()
        run.finish()
        guard case .network? = error else {
            Issue.record("expected the wrong URL's network error, got \(String(describing: error))")
            return
        }
        #expect(await good.0.stopped() == .userRequest)

        // Stopped at the limit once audio flows: a session the limit stops before any audio
        // arrived ends with "no answer" (an error, rightly), and on a loaded machine a limit of a
        // second came first.
        let fine = Self.sessions(2, server: server, loop: loop)
        let limited = StationRun(sessions: fine.map(\.0), loop: loop)
        limited.start(limit: nil)
        try await waitFor("audio on both sessions") { fine.allSatisfy { !$0.1.packets.isEmpty } }
        limited.stop(.limitReached)
        let none = await limited.stoppedAtFirstError()
        #expect(none == nil, "\(String(describing: none))")
        limited.finish()
        for (session, _) in fine { #expect(await session.stopped() == .limitReached) }
    }

    @Test("Without sessions: the run idles until its limit, then stopped() returns")
    func emptyRunLimit() async throws {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let run = StationRun(sessions: [], loop: loop)
        let started = ContinuousClock.now
        #expect(await run.run(limit: 0.5) == [])
        run.finish()
        #expect(ContinuousClock.now - started >= .seconds(0.5))
    }

    @Test("Without sessions: stop() ends the idling run, also when it came before stopped() was awaited")
    func emptyRunStop() async throws {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let stopsSeen = Locked<[StopReason]>([])
        let run = StationRun(sessions: [], loop: loop) { reason in stopsSeen.withLock { $0.append(reason) } }
        run.start(limit: nil)
        async let reasons = run.stopped()
        // Nothing ends the run but the stop below: no limit was given.
        run.stop(.userRequest)
        #expect(await reasons == [])
        #expect(await run.stopped() == [], "a late wait returns at once")
        run.finish()
        #expect(stopsSeen.withLock { $0 } == [.userRequest])
    }
}
