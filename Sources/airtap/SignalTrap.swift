import Dispatch
import Glibc

/// Turns SIGINT, SIGTERM and SIGHUP into one call, so a stop from the keyboard, from cron's
/// timeout or from a closed terminal ends as cleanly as a time limit.
final class SignalTrap {
    private let sources: [any DispatchSourceSignal]

    init(_ signals: [Int32] = [SIGINT, SIGTERM, SIGHUP], handler: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "airtap.signals")
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
