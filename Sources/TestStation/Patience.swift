/// How long a test waits for an event, counted in the time the waiting task had, not on the wall
/// clock.
///
/// Swift's tasks share one pool of as many threads as cores. Under ThreadSanitizer on two loaded
/// cores, a few CPU-bound tests can hold that pool for tens of seconds; every poll, every
/// in-process server and every deadline of the test process waits meanwhile, and a wall-clock
/// deadline expires on time the awaited event never had. So each check charges the time since the
/// previous one, but at most `longestCharge`: a wake-up that came that much late was the process
/// starved, not the event slow. A wait still ends: every check costs something, and a test's time
/// limit bounds the rest.
package struct Patience: Sendable {
    private var left: Duration
    private var lastCheck: ContinuousClock.Instant
    private let longestCharge: Duration

    /// `longestCharge` is what one check may cost at most: more than a poll's interval and a
    /// condition's own await take on a busy machine.
    package init(_ time: Duration, longestCharge: Duration = .seconds(5)) {
        left = time
        lastCheck = .now
        self.longestCharge = longestCharge
    }

    package init(seconds: Double) {
        self.init(.seconds(seconds))
    }

    /// Whether the wait's time is spent, charging the time since the previous check.
    package mutating func isSpent() -> Bool {
        let now = ContinuousClock.now
        left -= min(now - lastCheck, longestCharge)
        lastCheck = now
        return left <= .zero
    }
}

/// A wait that ran out.
package struct TimedOut: Error, CustomStringConvertible {
    package let what: String

    package init(what: String) {
        self.what = what
    }

    package var description: String { "timed out waiting for \(what)" }
}

/// Checks `condition` every `interval` until it holds, for `seconds` of the test process's time
/// (`Patience`): generous, room for a machine three times slower than a busy CI runner; the
/// condition is the event waited for. A timeout says what `diagnosis` saw then.
package func waitFor(_ what: String, seconds: Double = 60, every interval: Duration = .milliseconds(50),
                     diagnosis: (() async -> String)? = nil, _ condition: () async throws -> Bool) async throws {
    var patience = Patience(seconds: seconds)
    while try await !condition() {
        guard !patience.isSpent() else {
            let seen = await diagnosis?()
            throw TimedOut(what: what + (seen.map { " (\($0))" } ?? ""))
        }
        try await Task.sleep(for: interval)
    }
}
