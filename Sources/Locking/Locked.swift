#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a pthread mutex: the same shape as `Synchronization.Mutex` (`withLock`), but
/// visible to ThreadSanitizer. On Linux, Swift's `Mutex` locks with raw futexes that TSan does
/// not instrument, so TSan reports every access it guards as a race and `make tsan` would be
/// useless; pthread mutexes it understands. Uncontended, both cost a few tens of nanoseconds.
package final class Locked<Value>: @unchecked Sendable {
    // Why @unchecked Sendable is sound: `value` is read and written only inside `withLock`,
    // while `mutex` is held, and `mutex` itself is set up in init and torn down in deinit.
    private var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// `sending`, as `Synchronization.Mutex` takes it: the value enters the lock's region, so no
    /// other reference to non-Sendable state inside it stays behind with the caller.
    package init(_ value: sending Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// As `Mutex.withLock`: the body sees the value as `inout sending` and what it returns leaves
    /// as `sending`, so non-Sendable state can be handed in and out, never shared.
    package func withLock<Result, Failure: Error>(
        _ body: (inout sending Value) throws(Failure) -> sending Result
    ) throws(Failure) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
