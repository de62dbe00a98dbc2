import CCurl
import Dispatch
import Glibc
import Locking
import Synchronization

/// One thread, one `curl_multi` handle, every transfer of the process.
///
/// A station costs a curl easy handle and a delegate, not a thread: the same loop records one
/// station or hundreds. Delegates and scheduled work run on the loop's thread and must return
/// quickly (hand slow work to a queue of their own).
///
/// The loop waits in `epoll_wait` on the sockets curl names through its socket callback and
/// drives curl with `curl_multi_socket_action`, so a network read costs work on the one transfer
/// it is for. (`curl_multi_perform` + `curl_multi_poll` walk every transfer and poll every socket on
/// each wake-up: with 500 stations that was most of the process's CPU.)
package final class CurlMultiLoop: @unchecked Sendable {
    // Why @unchecked Sendable is sound: `multi`, `transfers`, `sources`, `timers`, `curlDeadline`,
    // `events`, `restWaits` and `restLength` are touched only by the loop thread: every public
    // method posts a command to `inbox` instead, and curl calls the socket and timer callbacks
    // only from inside the curl_multi_* calls that thread makes (and from curl_multi_cleanup in
    // `shutdown`, after the thread has ended). `inbox` is locked; writing the eventfd that wakes
    // the loop is a system call any thread may make.
    private let multi: UnsafeMutableRawPointer
    private let epoll: Int32
    /// An eventfd in the epoll set: written to wake the loop for a command.
    private let wakeup: Int32
    private var transfers: [Int: CurlTransfer] = [:]
    /// Other libraries' descriptors in the epoll set, by descriptor (`attach`).
    private var sources: [Int32: AttachedSource] = [:]
    /// Sorted by deadline, soonest first: a loop turn looks at the first only, however many
    /// stations have a limit timer.
    private var timers: [ScheduledWork] = []
    /// When curl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)` (its timer callback sets it).
    private var curlDeadline: ContinuousClock.Instant?
    private var events = [epoll_event](repeating: epoll_event(), count: 64)
    /// What a rest waits on: the eventfd and the attached sources (kept, so a rest allocates nothing).
    private var restWaits: [pollfd] = []
    private let inbox = Locked(Inbox())
    private let activity = TurnActivity()
    /// The loop thread's `pthread_t`, stored by that thread before it runs anything, for
    /// `assertOnLoopThread`.
    private let loopThread = Atomic<UInt>(0)
    private let finished = DispatchSemaphore(value: 0)
    /// After a turn that read from the network, the loop sleeps this long (commands still wake
    /// it) so the next turn finds a batch in the kernel's buffers rather than one read's worth:
    /// a 128 kbps stream arrives in many small segments, and a wake-up per segment was most of
    /// a real-time recording's CPU. Zero for a listener's latency (`play`), whose rests
    /// follow the audio it has ahead (`setRestLength`).
    private let batchMilliseconds: Int32
    /// Asked at the start of each rest how long it is, instead of `batchMilliseconds`, once set
    /// (`setRestLength`).
    private var restLength: (@Sendable () -> Duration)?

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
        case attach(any LoopDescriptorSource)
        case restLength(@Sendable () -> Duration)
        case shutdown
    }

    private struct AttachedSource {
        let source: any LoopDescriptorSource
        /// The events the epoll set holds for it.
        var events: UInt32
        var deadline: ContinuousClock.Instant?
    }

    private struct ScheduledWork {
        let deadline: ContinuousClock.Instant
        let work: @Sendable () -> Void
    }

    /// What a loop is made of, opened before the loop exists: a process out of descriptors
    /// (a low `ulimit -n`, many stations) gets an error to report instead of a trap.
    private struct Handles {
        let multi: UnsafeMutableRawPointer
        let epoll: Int32
        let wakeup: Int32
    }

    private static func openHandles() throws(TransferError) -> Handles {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        let epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw Self.openingError("epoll_create1", errno: errno) }
        let wakeup = eventfd(0, Int32(EFD_CLOEXEC) | Int32(EFD_NONBLOCK))
        guard wakeup >= 0 else {
            let error = errno
            close(epoll)
            throw Self.openingError("eventfd", errno: error)
        }
        guard let multi = curl_multi_init() else {
            close(epoll)
            close(wakeup)
            throw TransferError(kind: .other, curlCode: 0, message: "curl_multi_init failed (out of memory)")
        }
        return Handles(multi: multi, epoll: epoll, wakeup: wakeup)
    }

    private static func openingError(_ call: String, errno code: Int32) -> TransferError {
        let exhausted = code == EMFILE || code == ENFILE
        return TransferError(kind: exhausted ? .descriptorsExhausted : .other, curlCode: 0,
                             message: "cannot start the network loop: \(call): \(String(cString: strerror(code)))")
    }

    /// A loop, or an error when the process cannot open its descriptors (`.descriptorsExhausted`
    /// when it has none left). Commands use this; `init()` traps instead.
    /// `batching`: see `batchMilliseconds`; a recorder takes a second, a player none (until it
    /// has audio ahead: `setRestLength`).
    package static func open(batching: Duration = .zero) throws(TransferError) -> CurlMultiLoop {
        CurlMultiLoop(try openHandles(), batching: batching)
    }

    /// For tests and tools that own a fresh process: traps when no descriptor is left.
    package convenience init(batching: Duration = .zero) {
        do {
            self.init(try Self.openHandles(), batching: batching)
        } catch {
            preconditionFailure("\(error)")
        }
    }

    private init(_ handles: Handles, batching: Duration) {
        batchMilliseconds = Self.milliseconds(batching)
        multi = handles.multi
        epoll = handles.epoll
        wakeup = handles.wakeup
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.fd = wakeup
        epoll_ctl(epoll, EPOLL_CTL_ADD, wakeup, &event)
        // The loop outlives every callback: curl calls them only while the multi handle lives.
        let context = Unmanaged.passUnretained(self).toOpaque()
        ccurl_multi_setopt_socket_function(multi, curlSocketCallback)
        ccurl_multi_setopt_pointer(multi, CURLMOPT_SOCKETDATA, context)
        ccurl_multi_setopt_timer_function(multi, curlTimerCallback)
        ccurl_multi_setopt_pointer(multi, CURLMOPT_TIMERDATA, context)
        let thread = PosixThread { [self] in self.run() }
        thread.name = "airtap-ingest"
        thread.start()
    }

    private static func milliseconds(_ duration: Duration) -> Int32 {
        Int32(clamping: max(0, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
    }

    /// From the next turn on, each rest after a turn that read the network lasts what `length`
    /// says then, on the loop thread (instead of the `batching` it opened with): for a rest that
    /// depends on what the turn just read, as a player's does on the audio it has ahead.
    package func setRestLength(_ length: @escaping @Sendable () -> Duration) {
        post(.restLength(length))
    }

    /// Debug builds trap when this is called off the loop thread: delegates and scheduled work
    /// keep their state unlocked because only the loop thread touches it. Free in release builds.
    package func assertOnLoopThread(file: StaticString = #fileID, line: UInt = #line) {
        assert(pthread_equal(pthread_self(), pthread_t(loopThread.load(ordering: .acquiring))) != 0,
               "called off the curl loop thread", file: file, line: line)
    }

    /// Starts a transfer; the delegate hears about it on the loop thread.
    @discardableResult
    package func start(_ options: TransferOptions, delegate: any TransferDelegate) -> TransferID {
        inbox.withLock { inbox -> TransferID in
            let id = TransferID(rawValue: inbox.nextID)
            inbox.nextID += 1
            // After shutdown the transfer is dropped: the multi handle is gone or going.
            guard !inbox.isShutDown else { return id }
            inbox.commands.append(.start(id, options, delegate))
            wake()
            return id
        }
    }

    /// Stops a transfer; its delegate gets `didCompleteWith: .aborted` unless it already completed.
    package func cancel(_ id: TransferID) {
        post(.cancel(id))
    }

    /// Unpauses a transfer whose delegate answered `.pause`; its kept bytes arrive again.
    package func resume(_ id: TransferID) {
        post(.resume(id))
    }

    /// Runs `work` on the loop thread after `delay` seconds (0: on the next turn).
    package func schedule(after delay: Double, _ work: @escaping @Sendable () -> Void) {
        let deadline = ContinuousClock.now.advanced(by: .nanoseconds(Int64(max(0, delay) * 1e9)))
        post(.schedule(ScheduledWork(deadline: deadline, work: work)))
    }

    /// Waits on `source`'s descriptor in this loop from the next turn on (see `LoopDescriptorSource`).
    /// After shutdown it is dropped without a call.
    package func attach(_ source: any LoopDescriptorSource) {
        post(.attach(source))
    }

    /// Aborts every transfer, detaches every source, waits for the thread to end and frees the multi handle.
    /// Commands posted afterwards are dropped.
    package func shutdown() {
        let first = inbox.withLock { inbox -> Bool in
            guard !inbox.isShutDown else { return false }
            inbox.isShutDown = true
            inbox.commands.append(.shutdown)
            wake()
            return true
        }
        guard first else { return }
        finished.wait()
        curl_multi_cleanup(multi)
        close(epoll)
        close(wakeup)
    }

    /// Wakes the loop inside the lock, and never once shut down: `shutdown` closes the eventfd, and
    /// a late wake-up would write into whatever file took its number.
    private func post(_ command: Command) {
        inbox.withLock { inbox in
            guard !inbox.isShutDown else { return }
            inbox.commands.append(command)
            wake()
        }
    }

    /// Inside the inbox lock only (see `post`).
    private func wake() {
        var one: UInt64 = 1
        _ = write(wakeup, &one, MemoryLayout<UInt64>.size)
    }

    // MARK: The loop thread

    private func run() {
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
        var running: Int32 = 0
        /// The last turn handed transfers audio: rest before the next look at the sockets.
        var restDue = false
        /// The loop has just rested, or the last look at the sockets filled `events`: the batch
        /// is waiting, so the sockets are looked at without blocking (curl's timeout action may
        /// have read them already).
        var lookAgain = false
        while true {
            activity.turn &+= 1
            guard performCommands() else { return }
            runDueTimers()
            runDueSources()
            if let deadline = curlDeadline, deadline <= .now {
                curlDeadline = nil
                curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running)
                collectCompletions()
            }
            if restDue {
                restDue = false
                lookAgain = restBetweenBatches()
                // Commands and timers first (curl's among them), then the batch.
                if lookAgain { continue }
            }
            refreshSources()
            let timeout = lookAgain ? 0 : waitMilliseconds()
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, Int32($0.count), timeout) }
            handleEvents(count, running: &running)
            collectCompletions()
            // Only after audio arrived (from a socket event or curl's timeout action): a turn
            // that connected or read a head goes straight on, so a station starts without waiting
            // out a batch; and not while a source sends faster than real time (a fast rip would
            // get a kernel buffer's worth a rest). A look that filled `events` may have left
            // ready sockets behind (epoll hands them over in turn): they are read before the next
            // rest, or with 1000 stations each would wait 16 rests for its turn, past curl's
            // stall check.
            lookAgain = Int(count) == events.count
            guard !lookAgain else { continue }
            restDue = activity.receivedBody && activity.fastTransfers == 0 && activity.transfersSettingUp == 0
            activity.receivedBody = false
        }
    }

    /// Performs the commands posted since the last turn; false after `shutdown` (the loop ends).
    @inline(__always)
    private func performCommands() -> Bool {
        let commands = inbox.withLock { inbox -> [Command] in
            defer { inbox.commands.removeAll(keepingCapacity: true) }
            return inbox.commands
        }
        for command in commands {
            switch command {
            case .start(let id, let options, let delegate):
                add(CurlTransfer(id: id, options: options, delegate: delegate, activity: activity))
            case .cancel(let id):
                if let transfer = transfers[id.rawValue] { remove(transfer, end: .aborted) }
            case .resume(let id):
                // CURLPAUSE_CONT is 0; curl may deliver the kept bytes from inside this call.
                if let transfer = transfers[id.rawValue] { curl_easy_pause(transfer.easy, 0) }
            case .schedule(let work):
                let index = timers.firstIndex { $0.deadline > work.deadline } ?? timers.endIndex
                timers.insert(work, at: index)
            case .attach(let source):
                add(source)
            case .restLength(let length):
                restLength = length
            case .shutdown:
                for transfer in transfers.values { remove(transfer, end: .aborted) }
                for attached in sources.values { detach(attached.source) }
                finished.signal()
                return false
            }
        }
        return true
    }

    /// Hands the ready sockets of one `epoll_wait` to their owners: the wakeup, an attached
    /// source, or curl.
    @inline(__always)
    private func handleEvents(_ count: Int32, running: inout Int32) {
        for index in 0..<max(0, Int(count)) {
            let event = events[index]
            let socket = event.data.fd
            if socket == wakeup {
                var value: UInt64 = 0
                _ = read(wakeup, &value, MemoryLayout<UInt64>.size)
                continue
            }
            if sources[socket] != nil {
                serve(socket, events: event.events)
                continue
            }
            var action: Int32 = 0
            // A hang-up is read as end of stream (curl reads 0 bytes and finishes the transfer).
            if event.events & (EPOLLIN.rawValue | EPOLLHUP.rawValue) != 0 { action |= CURL_CSELECT_IN }
            if event.events & EPOLLOUT.rawValue != 0 { action |= CURL_CSELECT_OUT }
            if event.events & EPOLLERR.rawValue != 0 { action |= CURL_CSELECT_ERR }
            curl_multi_socket_action(multi, socket, action, &running)
        }
    }

    /// Sleeps out the batching window, or until a command or scheduled work is due. Only the
    /// eventfd is watched: the sockets fill their kernel buffers meanwhile (Linux grows them to
    /// megabytes; two seconds of a 320 kbps stream is 80 KB), and the next `epoll_wait` hands
    /// them over together. curl's own timer waits for the rest's end: while audio flows it only
    /// runs the once-a-second low-speed check, re-armed by every read, and two such timers cut
    /// each rest in two.
    /// False, at once, when no rest is set (`play` while it has little audio ahead).
    private func restBetweenBatches() -> Bool {
        let batch = restLength.map { Self.milliseconds($0()) } ?? batchMilliseconds
        guard batch > 0 else { return false }
        var rest = Int(batch)
        if let deadline = timers.first?.deadline { rest = min(rest, deadline.millisecondsFromNow) }
        if let deadline = sources.values.compactMap(\.deadline).min() { rest = min(rest, deadline.millisecondsFromNow) }
        // Sources answer at once (a media key should not wait out the rest): their descriptors end it too.
        restWaits.removeAll(keepingCapacity: true)
        restWaits.append(pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0))
        for (descriptor, attached) in sources where attached.events != 0 {
            restWaits.append(pollfd(fd: descriptor, events: Int16(truncatingIfNeeded: attached.events), revents: 0))
        }
        _ = poll(&restWaits, nfds_t(restWaits.count), Int32(rest))
        return true
    }

    // MARK: curl's callbacks (on the loop thread, inside curl calls)

    /// Keeps the epoll set what curl wants watched.
    fileprivate func watch(_ socket: curl_socket_t, _ what: Int32) {
        guard what != CURL_POLL_REMOVE else {
            // Fails harmlessly when the socket is closed already: the kernel dropped it from the set.
            epoll_ctl(epoll, EPOLL_CTL_DEL, socket, nil)
            return
        }
        var event = epoll_event()
        event.events = (what & CURL_POLL_IN != 0 ? EPOLLIN.rawValue : 0) | (what & CURL_POLL_OUT != 0 ? EPOLLOUT.rawValue : 0)
        event.data.fd = socket
        if epoll_ctl(epoll, EPOLL_CTL_MOD, socket, &event) != 0 {
            epoll_ctl(epoll, EPOLL_CTL_ADD, socket, &event)
        }
    }

    fileprivate func setCurlTimer(milliseconds: Int) {
        curlDeadline = milliseconds < 0 ? nil : ContinuousClock.now.advanced(by: .milliseconds(milliseconds))
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
            // A redirect the transfer follows itself goes on with the same handle.
            if transfer.isRedirected, transfer.followRedirect(in: multi) { continue }
            remove(transfer, end: transfer.end(for: code))
        }
    }

    // MARK: Other libraries' descriptors

    private func add(_ source: any LoopDescriptorSource) {
        var event = epoll_event()
        event.data.fd = source.descriptor
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, source.descriptor, &event) == 0 else {
            source.detached()
            return
        }
        sources[source.descriptor] = AttachedSource(source: source, events: 0, deadline: nil)
    }

    private func detach(_ source: any LoopDescriptorSource) {
        sources[source.descriptor] = nil
        epoll_ctl(epoll, EPOLL_CTL_DEL, source.descriptor, nil)
        source.detached()
    }

    private func serve(_ descriptor: Int32, events: UInt32) {
        guard let attached = sources[descriptor] else { return }
        if !attached.source.ready(events: events) { detach(attached.source) }
    }

    private func runDueSources() {
        guard !sources.isEmpty else { return }
        let now = ContinuousClock.now
        for (descriptor, attached) in sources {
            if let deadline = attached.deadline, deadline <= now { serve(descriptor, events: 0) }
        }
    }

    /// Asks each source what it waits for now (a write it queued, a reply it expects) and keeps
    /// the epoll set and its deadline in step.
    private func refreshSources() {
        guard !sources.isEmpty else { return }
        for (descriptor, attached) in sources {
            let interest = attached.source.interest()
            var updated = attached
            updated.deadline = interest.timeout.map { ContinuousClock.now.advanced(by: $0) }
            if interest.events != attached.events {
                var event = epoll_event()
                event.events = interest.events
                event.data.fd = descriptor
                epoll_ctl(epoll, EPOLL_CTL_MOD, descriptor, &event)
                updated.events = interest.events
            }
            sources[descriptor] = updated
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

    /// Until curl's timer or ours is due, at most a second; rounded up, so a deadline less than a
    /// millisecond away is waited for rather than spun on.
    private func waitMilliseconds() -> Int32 {
        var timeout = 1000
        if let deadline = curlDeadline { timeout = min(timeout, deadline.millisecondsFromNow) }
        if let deadline = timers.first?.deadline { timeout = min(timeout, deadline.millisecondsFromNow) }
        for attached in sources.values {
            if let deadline = attached.deadline { timeout = min(timeout, deadline.millisecondsFromNow) }
        }
        return Int32(timeout)
    }
}

// Capture-free closures convert to C function pointers; the loop rides in the user pointer.
private let curlSocketCallback: curl_socket_callback = { _, socket, what, context, _ in
    guard let context else { return -1 }
    Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue().watch(socket, what)
    return 0
}

private let curlTimerCallback: curl_multi_timer_callback = { _, milliseconds, context in
    guard let context else { return -1 }
    Unmanaged<CurlMultiLoop>.fromOpaque(context).takeUnretainedValue().setCurlTimer(milliseconds: milliseconds)
    return 0
}
