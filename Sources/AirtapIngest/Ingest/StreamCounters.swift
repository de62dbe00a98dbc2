import Synchronization

/// Counts what a station's session delivers, for `record --metrics-listen`: a sink beside the
/// recorder. Atomics only: an increment per packet on the
/// ingest thread, no lock, no allocation; read from the metrics server's thread.
package final class StreamCounters: StreamSink {
    private let frames = Atomic<Int>(0)
    private let audioBytes = Atomic<Int>(0)
    private let titles = Atomic<Int>(0)
    private let reconnects = Atomic<Int>(0)
    private let streaming = Atomic<Bool>(false)

    package init() {}

    package func receive(_ event: StreamEvent) throws {
        switch event {
        case .packet(let packet):
            frames.add(1, ordering: .relaxed)
            audioBytes.add(packet.bytes.count, ordering: .relaxed)
        case .metadata:
            titles.add(1, ordering: .relaxed)
        case .connection(let state):
            if case .reconnecting = state { reconnects.add(1, ordering: .relaxed) }
            if case .streaming = state {
                streaming.store(true, ordering: .relaxed)
            } else {
                streaming.store(false, ordering: .relaxed)
            }
        case .ended:
            streaming.store(false, ordering: .relaxed)
        case .head, .format, .discontinuity:
            break
        }
    }

    package struct Snapshot: Sendable, Hashable {
        package let frames: Int
        package let audioBytes: Int
        package let titles: Int
        package let reconnects: Int
        package let isStreaming: Bool
    }

    package var snapshot: Snapshot {
        Snapshot(frames: frames.load(ordering: .relaxed), audioBytes: audioBytes.load(ordering: .relaxed),
                 titles: titles.load(ordering: .relaxed), reconnects: reconnects.load(ordering: .relaxed),
                 isStreaming: streaming.load(ordering: .relaxed))
    }
}
