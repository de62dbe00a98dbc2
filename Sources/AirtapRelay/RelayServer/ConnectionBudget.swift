/// How many connections a server holds at once, and how many of them may be pending (connected,
/// no request yet). Every connection is a file descriptor that the rest of the process (its
/// recordings, its upstream sockets) may need, so the cap comes from the descriptor limit.
///
/// A pending connection costs whoever opened it nothing, so pending connections never get more
/// than half the cap: past that, a new connection takes the place of the oldest pending one. Real
/// listeners ask at once, so they get in however many idle sockets a stranger opens; only when
/// every slot holds a connection that did ask is a new one refused.
struct ConnectionBudget: Sendable, Hashable {
    /// Connections held at once, whatever they are doing.
    package let maxConnections: Int
    /// Connections without a request, at most: always half the cap or fewer.
    package let maxPending: Int

    /// What to do with a connection just accepted.
    enum Admission: Sendable, Hashable {
        case admit
        /// Admit it, and close the connection that has waited longest without a request.
        case admitClosingOldestPending
        /// Close it at once: every slot is held by a connection that asked for something.
        case refuse
    }

    /// `maxPending` is lowered to half of `maxConnections` when it is more.
    package init(maxConnections: Int, maxPending: Int) {
        self.maxConnections = max(2, maxConnections)
        self.maxPending = min(max(1, maxPending), self.maxConnections / 2)
    }

    /// The budget a process with `descriptorLimit` descriptors can afford after keeping `reserve`
    /// for everything else; a server gets at least 16 connections, and at most `ceiling`.
    package init(descriptorLimit: Int, reserve: Int, ceiling: Int = .max, pendingCeiling: Int = 256) {
        let affordable = descriptorLimit > reserve ? descriptorLimit - reserve : 0
        self.init(maxConnections: min(ceiling, max(16, affordable)), maxPending: pendingCeiling)
    }

    /// The listen socket's queue of connections not yet accepted: deep enough that a flood waits
    /// there, where accepting and closing it is quick, rather than in SYN retries (1 s, 2 s, 4 s...)
    /// that a real client stuck among them would wait out too.
    package static let acceptBacklog: Int32 = 512

    /// Descriptors left for everything but connections: stdio, event loops, logs, locks, and per
    /// station its upstream socket and the files a recording writes.
    package static func descriptorReserve(stations: Int) -> Int {
        64 + 8 * stations
    }

    /// `open` connections are held, `pending` of them without a request. Below `maxPending` open
    /// connections the pending count cannot matter (see `mustCountPending`), so a caller may pass
    /// `open` for it then.
    package func admission(open: Int, pending: Int) -> Admission {
        if pending >= maxPending { return .admitClosingOldestPending }
        guard open >= maxConnections else { return .admit }
        return pending > 0 ? .admitClosingOldestPending : .refuse
    }

    /// Whether `admission` needs the true pending count: a server with fewer than `maxPending`
    /// connections admits the next one whatever they are doing, and need not look.
    package func mustCountPending(open: Int) -> Bool {
        open >= maxPending
    }
}
