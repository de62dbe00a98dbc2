import Foundation

/// Runs blocking work (an encode that waits for an ffmpeg child, a long LAME encode) on a thread
/// of its own and awaits it. Swift's tasks and Dispatch's global queues share one pool of
/// threads, as many as there are cores: two tests blocked in such work on a two-core machine
/// froze every other task of the test process (a loaded run measured 45 s), servers' replies
/// and deadlines included. `DispatchQueue.global()` is that same pool, so it is no way out.
package func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try work() }) }
        thread.name = "airtap.blocking"
        thread.start()
    }
}

/// A value made once, on a thread of its own, and awaited by every test that needs it. A static
/// `let` that encodes instead holds each test that touches it blocked in its initializer, a pool
/// thread apiece, until the first one's encode ends.
final class SharedValue<Value: Sendable>: Sendable {
    private let task: Task<Value, any Error>

    package init(_ make: @escaping @Sendable () throws -> Value) {
        task = Task { try await onOwnThread(make) }
    }

    package var value: Value {
        get async throws { try await task.value }
    }
}

extension StationProgram {
    /// `init(configuration:)` on a thread of its own: for async code, which must not block.
    package static func encoding(_ configuration: StationConfiguration) async throws -> StationProgram {
        try await onOwnThread { try StationProgram(configuration: configuration) }
    }
}
