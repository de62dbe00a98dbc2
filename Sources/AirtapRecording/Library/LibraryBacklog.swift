import Locking

/// Work handed off a recorder's path and done in order on a thread of its own, a batch at a
/// time: whatever is waiting when the worker comes back is one batch. Bounded: a producer that
/// finds `capacity` items waiting waits for room, so a backlog never grows without bound.
///
/// The worker thread exists only while there is work; `drain` waits until everything handed
/// over has been done.
final class LibraryBacklog<Item: Sendable>: @unchecked Sendable {
    // Why @unchecked Sendable is sound: `items`, `isWorking` and `hasWorker` are read and written
    // only with `condition` locked; `process` and `capacity` are immutable; the items are Sendable.
    private let condition = ConditionLock()
    private var items: [Item] = []
    /// A batch is taken and not done yet.
    private var isWorking = false
    private var hasWorker = false
    private let capacity: Int
    private let process: @Sendable ([Item]) -> Void

    init(capacity: Int, process: @escaping @Sendable ([Item]) -> Void) {
        self.capacity = max(1, capacity)
        self.process = process
    }

    func submit(_ item: Item) {
        condition.lock()
        while items.count >= capacity { condition.wait() }
        items.append(item)
        let startsWorker = !hasWorker
        hasWorker = true
        condition.broadcast()
        condition.unlock()
        if startsWorker {
            let thread = PosixThread { [self] in work() }
            thread.name = "airtap.library"
            thread.start()
        }
    }

    /// Returns once every item submitted before the call is done.
    func drain() {
        condition.lock()
        while !items.isEmpty || isWorking { condition.wait() }
        condition.unlock()
    }

    private func work() {
        condition.lock()
        while !items.isEmpty {
            let batch = items
            items.removeAll(keepingCapacity: true)
            isWorking = true
            condition.broadcast()
            condition.unlock()
            process(batch)
            condition.lock()
            isWorking = false
        }
        hasWorker = false
        condition.broadcast()
        condition.unlock()
    }
}
