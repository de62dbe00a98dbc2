import CurlSource
import Locking
import TestStation
import Testing

/// The curl loop's rest between batches (issue 15), against the real test station, which writes
/// every 100 ms: a recorder's loop hands its transfers a batch per rest, not a read per write.
@Suite("The curl loop rests between batches")
struct LoopBatchingTests {
    /// When each body chunk arrived, on the loop's clock.
    final class ArrivalLog: TransferDelegate {
        let arrivals = Locked<[ContinuousClock.Instant]>([])

        func transfer(_ id: TransferID, didReceiveHead head: TransferHead) -> Bool { true }

        func transfer(_ id: TransferID, didReceive bytes: UnsafeRawBufferPointer) -> ReceiveDecision {
            let now = ContinuousClock.now
            arrivals.withLock { $0.append(now) }
            return .accepted
        }

        func transfer(_ id: TransferID, didCompleteWith end: TransferEnd) {}

        /// Arrival times grouped into turns: chunks less than 50 ms apart came in the same one.
        var turns: [ContinuousClock.Instant] {
            arrivals.withLock { arrivals in
                var turns: [ContinuousClock.Instant] = []
                var last: ContinuousClock.Instant?
                for arrival in arrivals {
                    if let last, arrival - last < .milliseconds(50) {} else { turns.append(arrival) }
                    last = arrival
                }
                return turns
            }
        }
    }

    @Test("Set to 400 ms, turns that hand over audio are at least the rest apart: curl's once-a-second timer does not cut a rest short")
    func turnsARestApart() async throws {
        let server = try await TestStationServer.start(StationConfiguration(metaint: 8000, trackSeconds: 30, pace: .realtime))
        defer { Task { try? await server.stop() } }
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        loop.setBatching(.milliseconds(400))
        let log = ArrivalLog()
        loop.start(TransferOptions(url: server.streamURL, userAgent: "airtap-test"), delegate: log)
        // Six turns: five rests, which take two seconds at the least, whatever the machine's load.
        try await waitFor("six turns with audio", seconds: 60) { log.turns.count >= 6 }
        let turns = log.turns
        // From the second turn: the first follows the head, which comes without a rest.
        for (earlier, later) in zip(turns.dropFirst(), turns.dropFirst(2)) {
            // poll's timeout is in whole milliseconds, rounded up: a rest is never shorter.
            #expect(later - earlier >= .milliseconds(395), "turns \(later - earlier) apart")
        }
        // Without the rest the station's 100 ms writes arrive as a turn each: about 4 per 400 ms.
        let span = try #require(turns.last) - turns[1]
        #expect(turns.count - 2 <= Int(span / .milliseconds(395)), "\(turns.count) turns in \(span)")
    }
}
