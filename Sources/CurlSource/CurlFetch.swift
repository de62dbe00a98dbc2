import Locking

/// One bounded GET on a loop: the whole answer, or why there is none. For small documents from
/// strangers (a station directory's JSON), where a stream's rules (no end, a stall timeout)
/// do not fit: the body is capped before it is kept, and the whole request has a time limit,
/// so a server that trickles just above curl's stall rate cannot hold it for hours.
package enum CurlFetch {
    package enum Outcome: Sendable, Equatable {
        /// The server answered (any status) with this head and the whole body.
        case answered(TransferHead, body: [UInt8])
        /// The body passed `maxBodyBytes`: the transfer was stopped there.
        case tooLarge(limit: Int)
        /// The time limit passed first.
        case timedOut(seconds: Double)
        case failed(TransferError)
    }

    /// Starts the GET; `completion` runs once, on the loop's thread (or never, when the loop
    /// shuts down before the request starts).
    package static func start(_ options: TransferOptions, maxBodyBytes: Int, timeLimit: Double, on loop: CurlMultiLoop,
                              completion: @escaping @Sendable (Outcome) -> Void) {
        let fetch = Fetch(loop: loop, maxBodyBytes: maxBodyBytes, completion: completion)
        let id = loop.start(options, delegate: fetch)
        loop.schedule(after: timeLimit) { fetch.expire(id, after: timeLimit) }
    }

    /// `start`, awaited. The loop must outlive the call.
    package static func get(_ options: TransferOptions, maxBodyBytes: Int, timeLimit: Double,
                            on loop: CurlMultiLoop) async -> Outcome {
        await withCheckedContinuation { continuation in
            start(options, maxBodyBytes: maxBodyBytes, timeLimit: timeLimit, on: loop) { continuation.resume(returning: $0) }
        }
    }
}

/// The delegate of one fetch. Every call comes on the loop's thread; `state` is locked anyway,
/// since the object is shared with the timer's closure and must be Sendable.
private final class Fetch: TransferDelegate {
    private let loop: CurlMultiLoop
    private let maxBodyBytes: Int
    private let completion: @Sendable (CurlFetch.Outcome) -> Void
    private let state = Locked(State())

    private struct State {
        var head: TransferHead?
        var body: [UInt8] = []
        /// Why the fetch was stopped before its end, when it was.
        var stoppedBecause: CurlFetch.Outcome?
        var isComplete = false
    }

    init(loop: CurlMultiLoop, maxBodyBytes: Int, completion: @escaping @Sendable (CurlFetch.Outcome) -> Void) {
        self.loop = loop
        self.maxBodyBytes = maxBodyBytes
        self.completion = completion
    }

    func expire(_ id: TransferID, after seconds: Double) {
        let running = state.withLock { state -> Bool in
            guard !state.isComplete, state.stoppedBecause == nil else { return false }
            state.stoppedBecause = .timedOut(seconds: seconds)
            return true
        }
        if running { loop.cancel(id) }
    }

    func transfer(_ id: TransferID, didReceiveHead head: TransferHead) -> Bool {
        state.withLock { $0.head = head }
        return true
    }

    func transfer(_ id: TransferID, didReceive bytes: UnsafeRawBufferPointer) -> ReceiveDecision {
        state.withLock { state in
            guard state.stoppedBecause == nil else { return .abort }
            guard state.body.count + bytes.count <= maxBodyBytes else {
                state.stoppedBecause = .tooLarge(limit: maxBodyBytes)
                state.body = []
                return .abort
            }
            state.body.append(contentsOf: bytes)
            return .accepted
        }
    }

    func transfer(_ id: TransferID, didCompleteWith end: TransferEnd) {
        let outcome = state.withLock { state -> CurlFetch.Outcome? in
            guard !state.isComplete else { return nil }
            state.isComplete = true
            if let stopped = state.stoppedBecause { return stopped }
            switch end {
            case .finished:
                guard let head = state.head else {
                    return .failed(TransferError(kind: .protocolError, curlCode: 0, message: "the server sent no answer"))
                }
                return .answered(head, body: state.body)
            case .aborted:
                return .failed(TransferError(kind: .other, curlCode: 0, message: "the request was cancelled"))
            case .failed(let error):
                return .failed(error)
            }
        }
        if let outcome { completion(outcome) }
    }
}
