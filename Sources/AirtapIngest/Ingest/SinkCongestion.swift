import CurlSource

/// The one rule every source follows when its sinks fall behind: while a lossless sink (a queue
/// in front of a disk) is congested, the source stops reading (a transfer pauses, a file waits)
/// instead of buffering without bound, and goes on once that sink has room again.
struct SinkCongestion: Sendable {
    private let sinks: [any CongestionSignalling]

    init(_ sinks: [any StreamSink]) {
        self.sinks = sinks.compactMap(\.congestion)
    }

    /// Whether a sink is congested now. Sources ask this at every read before `wait`, so the
    /// closure `wait` takes (a heap allocation) is made only when one is.
    var isCongested: Bool { sinks.contains { $0.isCongested } }

    /// False when no sink is congested. Else true, and `relieved` runs on `loop`'s thread once the
    /// congested sink has room again: the source checks there that it still waits, and goes on.
    func wait(on loop: CurlMultiLoop, relieved: @escaping @Sendable () -> Void) -> Bool {
        guard let congested = sinks.first(where: \.isCongested) else { return false }
        congested.notifyWhenRelieved {
            loop.schedule(after: 0) {
                loop.assertOnLoopThread()
                relieved()
            }
        }
        return true
    }
}
