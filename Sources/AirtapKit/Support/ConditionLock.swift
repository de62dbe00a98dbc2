#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// A pthread mutex with a condition variable: the part of Foundation's `NSCondition` airtap uses
/// (`lock`, `unlock`, `wait`, `wait(until:)`, `signal`, `broadcast`), without linking Foundation.
/// Plain pthreads, which ThreadSanitizer understands.
final class ConditionLock: @unchecked Sendable {
    // Why @unchecked Sendable is sound: the mutex and condition are set up in init, torn down in
    // deinit, and in between only used through pthread calls, which are thread-safe.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)  // CLOCK_REALTIME: deadlines are Dates
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    func signal() { pthread_cond_signal(condition) }
    func broadcast() { pthread_cond_broadcast(condition) }

    /// Call with the lock held; it is released while waiting and held again on return.
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Like `wait()`, but gives up at `deadline`: false when it timed out.
    @discardableResult
    func wait(until deadline: Date) -> Bool {
        let seconds = max(0, deadline.timeIntervalSince1970)
        let whole = seconds.rounded(.down)
        var time = timespec(tv_sec: time_t(whole), tv_nsec: Int(min(999_999_999, ((seconds - whole) * 1e9).rounded(.down))))
        return pthread_cond_timedwait(condition, mutex, &time) != ETIMEDOUT
    }
}
