#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex with a condition variable: the part of Foundation's `NSCondition` airtap uses
/// (`lock`, `unlock`, `wait`, `wait(seconds:)`, `signal`, `broadcast`), without Foundation.
/// Plain pthreads, which ThreadSanitizer understands. Timed waits run on CLOCK_MONOTONIC, so a
/// wall-clock step (NTP, a user setting the date) neither cuts a wait short nor stretches it.
package final class ConditionLock: @unchecked Sendable {
    // Why @unchecked Sendable is sound: the mutex and condition are set up in init, torn down in
    // deinit, and in between only used through pthread calls, which are thread-safe.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }
    package func signal() { pthread_cond_signal(condition) }
    package func broadcast() { pthread_cond_broadcast(condition) }

    /// Call with the lock held; it is released while waiting and held again on return.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Like `wait()`, but gives up after `seconds` on the monotonic clock: false when it timed out.
    @discardableResult
    package func wait(seconds: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + max(0, seconds)
        let whole = total.rounded(.down)
        var deadline = timespec(tv_sec: time_t(whole), tv_nsec: Int(min(999_999_999, ((total - whole) * 1e9).rounded(.down))))
        return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
    }
}
