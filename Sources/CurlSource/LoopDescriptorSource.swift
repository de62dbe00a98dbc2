import CCurl

/// A descriptor another library owns (a D-Bus connection, a pipe airtap reads), waited on in a `CurlMultiLoop`'s epoll
/// beside curl's sockets: the library gets the thread that already runs, not one of its own.
///
/// Every method is called on the loop thread only, so a source keeps its state unlocked.
package protocol LoopDescriptorSource: AnyObject, Sendable {
    /// The descriptor; it must stay the same while the source is attached.
    var descriptor: Int32 { get }
    /// What to wait for now, asked before every wait.
    func interest() -> LoopInterest
    /// The descriptor is ready (`events`: epoll's bits, EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP), or
    /// its timeout passed (`events` 0). False detaches the source.
    func ready(events: UInt32) -> Bool
    /// The last call: the source was detached (`ready` returned false) or the loop is shutting
    /// down. The source may close its descriptor now.
    func detached()
}

/// What a source waits for: epoll events (EPOLLIN, EPOLLOUT; 0 for none), and how long at most
/// before `ready` is called regardless (nil: no limit).
package struct LoopInterest: Sendable, Hashable {
    package var events: UInt32
    package var timeout: Duration?

    package init(events: UInt32, timeout: Duration?) {
        self.events = events
        self.timeout = timeout
    }

    /// Data to read (EPOLLIN), however long it takes.
    package static let readable = LoopInterest(events: EPOLLIN.rawValue, timeout: nil)
    /// Nothing for now; asked again before the next wait.
    package static let nothing = LoopInterest(events: 0, timeout: nil)
    /// `ready` at once with no events, which then detaches the source.
    package static let detach = LoopInterest(events: 0, timeout: .zero)
}

extension ContinuousClock.Instant {
    /// Milliseconds until this instant, 0 once it passed; rounded up, so a deadline less than a
    /// millisecond away is waited for rather than spun on.
    var millisecondsFromNow: Int {
        let wait = ContinuousClock.now.duration(to: self)
        guard wait > .zero else { return 0 }
        let nanoseconds = wait.components.seconds * 1_000_000_000 + wait.components.attoseconds / 1_000_000_000
        return Int((nanoseconds + 999_999) / 1_000_000)
    }
}
