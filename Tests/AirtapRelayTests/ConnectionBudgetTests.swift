@testable import AirtapRelay
import AirtapTestSupport
import NIOCore
import Testing

/// The connection bounds shared by `serve` and `record --metrics-listen`, without sockets.
@Suite("Connection budget")
struct ConnectionBudgetTests {
    /// Descriptor limits from tiny to generous, and 1 to 40 stations (the reserve grows with them).
    static let limits = [16, 64, 96, 128, 200, 256, 300, 512, 1024, 4096, 65536, 1_048_576]

    @Test("At every descriptor limit the pending limit sits below the cap, so the oldest idle connection is closed before the cap refuses anyone")
    func consistentAtEveryLimit() {
        for limit in Self.limits {
            for stations in [1, 3, 40] {
                let budget = ConnectionBudget(descriptorLimit: limit, reserve: ConnectionBudget.descriptorReserve(stations: stations))
                #expect(budget.maxPending >= 1, "\(limit), \(stations): \(budget)")
                #expect(budget.maxPending * 2 <= budget.maxConnections, "\(limit), \(stations): \(budget)")
                #expect(budget.maxConnections <= max(16, limit - ConnectionBudget.descriptorReserve(stations: stations)))
                let metrics = ConnectionBudget(descriptorLimit: limit, reserve: ConnectionBudget.descriptorReserve(stations: stations),
                                               ceiling: 64)
                #expect(metrics.maxConnections <= 64 && metrics.maxPending * 2 <= metrics.maxConnections)
            }
        }
        // The case seen in the field: 256 descriptors and 3 stations made a cap of 168 under a
        // pending limit of 256.
        let field = ConnectionBudget(descriptorLimit: 256, reserve: ConnectionBudget.descriptorReserve(stations: 3))
        #expect(field.maxConnections == 168)
        #expect(field.maxPending == 84)
        #expect(ConnectionBudget(descriptorLimit: 20000, reserve: 72).maxPending == 256)
    }

    @Test("Admission: below the limits admit; at the pending limit, or at the cap with anyone idle, close the oldest pending; refuse only a cap full of connections that asked")
    func admission() {
        let budget = ConnectionBudget(maxConnections: 10, maxPending: 4)
        #expect(budget.admission(open: 0, pending: 0) == .admit)
        #expect(budget.admission(open: 3, pending: 3) == .admit)
        #expect(budget.admission(open: 4, pending: 4) == .admitClosingOldestPending)
        #expect(budget.admission(open: 9, pending: 3) == .admit)
        #expect(budget.admission(open: 10, pending: 1) == .admitClosingOldestPending)
        #expect(budget.admission(open: 10, pending: 0) == .refuse)
        #expect(!budget.mustCountPending(open: 3) && budget.mustCountPending(open: 4))
        // A pending limit above the cap is lowered to half of it.
        #expect(ConnectionBudget(maxConnections: 4, maxPending: 100).maxPending == 2)
    }

    /// A connection with only its lifecycle: it performs the one action a table can cause.
    final class Stub: HeldConnection {
        private var machine: ListenerStateMachine
        private(set) var isClosed = false
        init(at now: NIODeadline) { machine = ListenerStateMachine(connectedAt: now) }

        var isAwaitingRequest: Bool { machine.isAwaitingRequest }
        var isListener: Bool { machine.isListener }

        func requestStream(ring: PacketRing) {
            _ = machine.streamRequested(metaint: nil, ring: ring, burstSeconds: 1)
        }

        func stop(_ reason: ListenerStopReason) {
            perform(machine.stop(reason))
        }

        func checkDeadline(at now: NIODeadline, limits: ListenerLimits) -> ListenerStopReason? {
            let action = machine.tick(at: now, limits: limits)
            perform(action)
            if case .close(let reason) = action { return reason }
            return nil
        }

        private func perform(_ action: ListenerStateMachine.Action) {
            if case .close = action { isClosed = true }
        }
    }

    @Test("1000 idle connections at 256 descriptors: at most the pending limit stay open, the newest ones, and a listener that then connects is admitted")
    func floodThenListener() {
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let budget = ConnectionBudget(descriptorLimit: 256, reserve: ConnectionBudget.descriptorReserve(stations: 3))
        let table = ConnectionTable<Stub>(budget: budget)
        var flood: [(id: Int, stub: Stub)] = []
        for _ in 0..<1000 {
            let stub = Stub(at: t0)
            guard let id = table.admit(stub) else { continue }
            flood.append((id, stub))
            // A closed connection leaves the table, as the server's channelInactive makes it.
            for entry in flood where entry.stub.isClosed { table.remove(entry.id) }
            flood.removeAll { $0.stub.isClosed }
        }
        #expect(flood.count == budget.maxPending)
        #expect(table.count == budget.maxPending)
        #expect(flood.map(\.id) == Array((1000 - budget.maxPending + 1)...1000))

        let listener = Stub(at: t0)
        #expect(table.admit(listener) != nil, "the listener was refused")
        listener.requestStream(ring: PacketRing(capacitySeconds: 1, capacityBytes: 1000))
        #expect(listener.isListener)
        // More idle connections never close it: only pending ones go.
        for _ in 0..<500 {
            let stub = Stub(at: t0)
            _ = table.admit(stub)
        }
        #expect(!listener.isClosed)
    }

    @Test("Connections that asked hold the cap: then a new one is refused; the request timeout closes idle ones")
    func fullOfListeners() {
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let table = ConnectionTable<Stub>(budget: ConnectionBudget(maxConnections: 4, maxPending: 2))
        let ring = PacketRing(capacitySeconds: 1, capacityBytes: 1000)
        for _ in 0..<4 {
            let stub = Stub(at: t0)
            #expect(table.admit(stub) != nil)
            stub.requestStream(ring: ring)
        }
        #expect(table.admit(Stub(at: t0)) == nil)

        let idle = ConnectionTable<Stub>(budget: ConnectionBudget(maxConnections: 4, maxPending: 2))
        let stub = Stub(at: t0)
        _ = idle.admit(stub)
        var closed: [ListenerStopReason] = []
        let limits = ListenerLimits(requestTimeout: .seconds(10), stallTimeout: .seconds(10))
        idle.closeExpired(at: t0 + .seconds(9), limits: limits) { _, _, reason in closed.append(reason) }
        #expect(closed.isEmpty && !stub.isClosed)
        idle.closeExpired(at: t0 + .seconds(10), limits: limits) { _, _, reason in closed.append(reason) }
        #expect(closed == [.requestTimeout] && stub.isClosed)
    }
}
