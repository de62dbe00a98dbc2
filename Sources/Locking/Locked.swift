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

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
