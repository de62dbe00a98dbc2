import CCurl
import Dispatch
import Locking

/// One thread, one `curl_multi` handle, every transfer of the process.
///
/// A station costs a curl easy handle and a delegate, not a thread: the same loop records one
/// station or hundreds. Delegates and scheduled work run on the loop's thread and must return
/// quickly (hand slow work to a queue of their own).
public final class CurlMultiLoop: @unchecked Sendable {
    // Why @unchecked Sendable is sound: `multi`, `transfers` and `timers` are touched only by the
    // loop thread (every public method posts a command to `inbox` instead). `inbox` is locked,
    // and `curl_multi_wakeup` is documented as callable from any thread.
    private let multi: UnsafeMutableRawPointer
    private var transfers: [Int: CurlTransfer] = [:]
    /// Sorted by deadline, soonest first: a loop turn looks at the first only, however many
    /// stations have a limit timer.
    private var timers: [ScheduledWork] = []
    private let inbox = Locked(Inbox())
    private let finished = DispatchSemaphore(value: 0)

    private struct Inbox {
        var commands: [Command] = []
        var nextID = 1
        var isShutDown = false
    }

    private enum Command {
        case start(TransferID, TransferOptions, any TransferDelegate)
        case cancel(TransferID)
        case resume(TransferID)
        case schedule(ScheduledWork)
        case shutdown
    }

    private struct ScheduledWork {
        let deadline: ContinuousClock.Instant
        let work: @Sendable () -> Void
    }

    public init() {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        guard let multi = curl_multi_init() else {
            // Only out of memory makes curl_multi_init fail; there is nothing to recover.
            preconditionFailure("curl_multi_init failed")
        }
        self.multi = multi
        let thread = PosixThread { [self] in self.run() }
        thread.name = "airtap-ingest"
        thread.start()
    }

    /// Starts a transfer; the delegate hears about it on the loop thread.
    @discardableResult
    public func start(_ options: TransferOptions, delegate: any TransferDelegate) -> TransferID {
        inbox.withLock { inbox -> TransferID in
            let id = TransferID(rawValue: inbox.nextID)
            inbox.nextID += 1
            // After shutdown the transfer is dropped: the multi handle is gone or going.
            guard !inbox.isShutDown else { return id }
            inbox.commands.append(.start(id, options, delegate))
            curl_multi_wakeup(multi)
            return id
        }
    }

    /// Stops a transfer; its delegate gets `didCompleteWith: .aborted` unless it already completed.
    public func cancel(_ id: TransferID) {
        post(.cancel(id))
    }

    /// Unpauses a transfer whose delegate answered `.pause`; its kept bytes arrive again.
    public func resume(_ id: TransferID) {
        post(.resume(id))
    }

    /// Runs `work` on the loop thread after `delay` seconds (0: on the next turn).
    public func schedule(after delay: Double, _ work: @escaping @Sendable () -> Void) {
        let deadline = ContinuousClock.now.advanced(by: .nanoseconds(Int64(max(0, delay) * 1e9)))
        post(.schedule(ScheduledWork(deadline: deadline, work: work)))
    }

    /// Aborts every transfer, waits for the thread to end and frees the multi handle.
    /// Commands posted afterwards are dropped.
    public func shutdown() {
        let first = inbox.withLock { inbox -> Bool in
            guard !inbox.isShutDown else { return false }
            inbox.isShutDown = true
            inbox.commands.append(.shutdown)
            curl_multi_wakeup(multi)
            return true
        }
        guard first else { return }
        finished.wait()
        curl_multi_cleanup(multi)
    }

    /// Wakes the loop inside the lock, and never once shut down: `curl_multi_cleanup` closes the
    /// wakeup socket pair, and a late wakeup would write into whatever file took its number.
    private func post(_ command: Command) {
        inbox.withLock { inbox in
            guard !inbox.isShutDown else { return }
            inbox.commands.append(command)
            curl_multi_wakeup(multi)
        }
    }

    // MARK: The loop thread

    private func run() {
        var running: Int32 = 0
        while true {
            let commands = inbox.withLock { inbox -> [Command] in
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return inbox.commands
            }
            for command in commands {
                switch command {
                case .start(let id, let options, let delegate):
                    add(CurlTransfer(id: id, options: options, delegate: delegate))
                case .cancel(let id):
                    if let transfer = transfers[id.rawValue] { remove(transfer, end: .aborted) }
                case .resume(let id):
                    // CURLPAUSE_CONT is 0; curl may deliver the kept bytes from inside this call.
                    if let transfer = transfers[id.rawValue] { curl_easy_pause(transfer.easy, 0) }
                case .schedule(let work):
                    let index = timers.firstIndex { $0.deadline > work.deadline } ?? timers.endIndex
                    timers.insert(work, at: index)
                case .shutdown:
                    for transfer in transfers.values { remove(transfer, end: .aborted) }
                    finished.signal()
                    return
                }
            }
            runDueTimers()
            curl_multi_perform(multi, &running)
            collectCompletions()
            curl_multi_poll(multi, nil, 0, pollTimeoutMilliseconds(), nil)
        }
    }

    private func add(_ transfer: CurlTransfer) {
        transfers[transfer.id.rawValue] = transfer
        curl_multi_add_handle(multi, transfer.easy)
    }

    private func remove(_ transfer: CurlTransfer, end: TransferEnd) {
        transfers[transfer.id.rawValue] = nil
        curl_multi_remove_handle(multi, transfer.easy)
        transfer.complete(end)
    }

    private func collectCompletions() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let code = message.pointee.data.result
            var tag: UnsafeMutableRawPointer?
            ccurl_getinfo_pointer(easy, CURLINFO_PRIVATE, &tag)
            guard let transfer = transfers[Int(bitPattern: tag)] else { continue }
            remove(transfer, end: transfer.end(for: code))
        }
    }

    private func runDueTimers() {
        guard let first = timers.first, first.deadline <= .now else { return }
        let now = ContinuousClock.now
        let count = timers.prefix { $0.deadline <= now }.count
        let due = timers.prefix(count)
        timers.removeFirst(count)
        for item in due { item.work() }
    }

    private func pollTimeoutMilliseconds() -> Int32 {
        var timeout: Int = 1000
        var curlTimeout = -1
        curl_multi_timeout(multi, &curlTimeout)
        if curlTimeout >= 0 { timeout = min(timeout, curlTimeout) }
        if let next = timers.first?.deadline {
            let wait = ContinuousClock.now.duration(to: next)
            let milliseconds = max(0, Int(wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000))
            timeout = min(timeout, milliseconds)
        }
        return Int32(timeout)
    }
}
