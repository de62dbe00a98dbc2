import NIOCore

/// A connection a `ConnectionTable` holds: its lifecycle is a `ListenerStateMachine` that only
/// the connection touches; the table asks it to stop (for a newer one, or when its time is up).
protocol HeldConnection: AnyObject {
    /// Connected and not yet asked for anything.
    var isAwaitingRequest: Bool { get }
    /// Closes the connection; `reason` is why, unless it had already ended for another.
    func stop(_ reason: ListenerStopReason)
    /// Holds the connection to its time limits: the reason it was closed for, nil while it may stay.
    func checkDeadline(at now: NIODeadline, limits: ListenerLimits) -> ListenerStopReason?
}

/// The connections of one server, kept within its `ConnectionBudget` and their time limits:
/// the relay's and the metrics server's alike. Loop-confined, like the server that owns it.
final class ConnectionTable<Connection: HeldConnection> {
    let budget: ConnectionBudget
    /// By id, which is the accept order: the smallest pending id is the oldest pending connection.
    private(set) var connections: [Int: Connection] = [:]
    private var nextID = 1

    init(budget: ConnectionBudget) {
        self.budget = budget
    }

    var count: Int { connections.count }

    /// The new connection's id, or nil when it must be closed at once. May close the oldest
    /// pending connection to make room for it.
    func admit(_ connection: Connection) -> Int? {
        let open = connections.count
        let pending = budget.mustCountPending(open: open) ? oldestPending() : (count: open, oldest: nil)
        switch budget.admission(open: open, pending: pending.count) {
        case .admit:
            break
        case .admitClosingOldestPending:
            pending.oldest?.stop(.failed("closed for a newer connection: \(pending.count) without a request"))
        case .refuse:
            return nil
        }
        let id = nextID
        nextID += 1
        connections[id] = connection
        return id
    }

    /// Forgets a closed connection; nil when the table did not hold it.
    @discardableResult
    func remove(_ id: Int) -> Connection? {
        connections.removeValue(forKey: id)
    }

    /// Closes every connection whose machine says its time is up, and tells `closed` why.
    func closeExpired(at now: NIODeadline, limits: ListenerLimits, _ closed: (Int, Connection, ListenerStopReason) -> Void) {
        for (id, connection) in connections {
            guard let reason = connection.checkDeadline(at: now, limits: limits) else { continue }
            closed(id, connection, reason)
        }
    }

    func closeAll(_ reason: ListenerStopReason) {
        for connection in connections.values {
            connection.stop(reason)
        }
    }

    /// How many connections have not sent a request, and the one that has waited longest.
    private func oldestPending() -> (count: Int, oldest: Connection?) {
        var count = 0
        var oldest: (id: Int, connection: Connection)?
        for (id, connection) in connections {
            guard connection.isAwaitingRequest else { continue }
            count += 1
            if oldest.map({ id < $0.id }) ?? true { oldest = (id, connection) }
        }
        return (count, oldest?.connection)
    }
}
