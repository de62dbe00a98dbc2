import Dispatch
import Glibc

/// Turns SIGINT, SIGTERM and SIGHUP into one call, so a stop from the keyboard, from cron's
/// timeout or from a closed terminal ends as cleanly as a time limit.
package final class SignalTrap: @unchecked Sendable {
    // Why @unchecked Sendable is sound: `sources` is a `let` set in init and never changed, and
    // libdispatch objects may be used from any thread (cancel() is thread-safe); corelibs
    // Dispatch just does not mark its source protocols Sendable.
    /// What stops a run: the keyboard, cron's timeout (or any `kill`), a closed terminal.
    package static let stopSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    private let sources: [any DispatchSourceSignal]

    package init(_ signals: [Int32] = SignalTrap.stopSignals, handler: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "airtap.signals")
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    package func cancel() {
        for source in sources { source.cancel() }
    }
}
