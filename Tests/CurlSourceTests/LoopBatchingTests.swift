import AirtapTestSupport
import CurlSource
import Locking
import NIOPosix
import TestStation
import Testing

/// The curl loop's rest between batches, against the real test station, which writes
/// every 100 ms: a recorder's loop hands its transfers a batch per rest, not a read per write.
@Suite("The curl loop rests between batches")
struct LoopBatchingTests {
    /// When each body chunk arrived, on the loop's clock, and its bytes.
    final class ArrivalLog: TransferDelegate {
        struct Arrival {
            var time: ContinuousClock.Instant
            var bytes: Int
        }

        let arrivals = Locked<[Arrival]>([])

        func transfer(_ id: TransferID, didReceiveHead head: TransferHead) -> Bool { true }

        func transfer(_ id: TransferID, didReceive bytes: UnsafeRawBufferPointer) -> ReceiveDecision {
            let arrival = Arrival(time: ContinuousClock.now, bytes: bytes.count)
            arrivals.withLock { $0.append(arrival) }
            return .accepted
        }

        let completed = Locked(false)

        func transfer(_ id: TransferID, didCompleteWith end: TransferEnd) {
            completed.withLock { $0 = true }
        }

        /// Arrival times grouped into turns: chunks less than `apart` apart came in the same one.
        func turns(apart: Duration) -> [ContinuousClock.Instant] {
            arrivals.withLock { arrivals in
                var turns: [ContinuousClock.Instant] = []
                var last: ContinuousClock.Instant?
                for arrival in arrivals.map(\.time) {
                    if let last, arrival - last < apart {} else { turns.append(arrival) }
                    last = arrival
                }
                return turns
            }
        }
    }

    @Test("Set to 1.5 s, turns that hand over audio are at least the rest apart: curl's once-a-second timer (re-armed by every read) does not cut a rest short")
    func turnsARestApart() async throws {
        let server = try await TestStationServer.start(StationConfiguration(metaint: 8000, trackSeconds: 30, pace: .realtime))
        defer { Task { try? await server.stop() } }
        // Longer than curl's low-speed check, whose once-a-second timer must not end a rest early.
        let loop = CurlMultiLoop(batching: .milliseconds(1500))
        defer { loop.shutdown() }
        let log = ArrivalLog()
        // A station in this process can be starved for seconds on a loaded machine: that must
        // not end the transfer (curl's stall and connect limits), only delay a turn.
        loop.start(TransferOptions(url: server.streamURL, userAgent: "airtap-test", connectTimeout: 300, stallTimeout: 300), delegate: log)
        // Chunks less than half a rest apart are one turn: a thread preempted inside a turn
        // does not split it.
        let apart = Duration.milliseconds(750)
        // Four turns: three rests, four and a half seconds at the least, whatever the load.
        try await waitFor("four turns with audio", seconds: 60,
                          diagnosis: { "\(log.turns(apart: apart).count) turns, transfer ended: \(log.completed.withLock { $0 })" }) {
            log.turns(apart: apart).count >= 4
        }
        let turns = log.turns(apart: apart)
        // From the second turn: the first follows the head, which comes without a rest.
        for (earlier, later) in zip(turns.dropFirst(), turns.dropFirst(2)) {
            // poll's timeout is in whole milliseconds, rounded up: a rest is never shorter.
            #expect(later - earlier >= .milliseconds(1495), "turns \(later - earlier) apart")
        }
    }

    @Test("A source faster than real time is not held back: a fast station's 20 minutes arrive with a rest or two, not a rest per kernel buffer")
    func fastSourceUnrested() async throws {
        // 20 minutes at 128 kbps is 19 MB: more than the socket buffers hold, so a loop that
        // rested between turns would rest several times.
        // A thread of the station's own: on the shared event loops, behind the suite's other fast
        // stations, it could stall for a second and read as real time.
        let stationLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { Task { try? await stationLoop.shutdownGracefully() } }
        let server = try await TestStationServer.start(StationConfiguration(metaint: 8000, trackSeconds: 60, pace: .fast,
                                                                            maxSeconds: 1200), eventLoopGroup: stationLoop)
        defer { Task { try? await server.stop() } }
        let loop = CurlMultiLoop(batching: .seconds(2))
        defer { loop.shutdown() }
        let log = ArrivalLog()
        loop.start(TransferOptions(url: server.streamURL, userAgent: "airtap-test", connectTimeout: 300, stallTimeout: 300), delegate: log)
        try await waitFor("the whole stream", seconds: 120) { log.completed.withLock { $0 } }
        let arrivals = log.arrivals.withLock { $0 }
        // A pause of 1.9 s or more is a rest (nothing else stops a loop that has data) or a stall
        // of the whole test process. Where the second before it brought the fast rate (256 KiB),
        // the loop knew the source was fast and must not have rested. Where it brought less, a
        // loaded machine (ThreadSanitizer beside busy loops) starved the station and the source
        // rightly read as real time. The first turn cannot know the source is fast yet, so one
        // rest may follow it, and one stall may come on top.
        var rests = 0, restsAfterSlowSeconds = 0
        for index in arrivals.indices.dropLast() where arrivals[index + 1].time - arrivals[index].time >= .milliseconds(1900) {
            var bytes = 0, earlier = index
            while earlier >= 0, arrivals[index].time - arrivals[earlier].time <= .seconds(1) {
                bytes += arrivals[earlier].bytes
                earlier -= 1
            }
            if bytes >= 256 * 1024 { rests += 1 } else { restsAfterSlowSeconds += 1 }
        }
        #expect(rests <= 2, "\(rests) rests after a fast second (\(restsAfterSlowSeconds) after a slow one) over \(arrivals.count) reads")
        #expect(arrivals.count > 100)
    }
}
