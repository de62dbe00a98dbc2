@testable import AirtapIngest
@testable import AirtapKit
import AirtapTestSupport
import Dispatch
import ICYWire
import Locking
import Testing

@Suite("QueuedSink: a queue without a timer")
struct QueuedSinkTests {
    private final class Counter: StreamSink {
        let received = Locked(0)
        func receive(_ event: StreamEvent) throws { received.withLock { $0 += 1 } }
    }

    /// Everything the queue was asked to run so far has run: its drains go through `target`,
    /// which runs one block at a time, in order.
    private static func settle(_ target: DispatchQueue) { target.sync {} }

    @Test("Without a timer, or before its timer, it wakes once its batch waits (64 unless given, never above the low-water mark)",
          arguments: [Double.infinity, 600])
    func batches(coalescing: Double) throws {
        let packet = try Self.packet()
        for (asked, wakesAt) in [(4, 4), (1, 1), (nil, 64), (1000, 256)] as [(Int?, Int)] {
            let target = DispatchQueue(label: "test.target")
            let counter = Counter()
            let queue = QueuedSink(counter, label: "test", coalescing: coalescing, target: target, batch: asked)
            for _ in 1..<wakesAt { try queue.receive(.packet(packet)) }
            Self.settle(target)
            #expect(counter.received.withLock { $0 } == 0, "batch \(String(describing: asked)): woke before \(wakesAt) events waited")
            try queue.receive(.packet(packet))
            Self.settle(target)
            #expect(counter.received.withLock { $0 } == wakesAt, "batch \(String(describing: asked))")
        }
    }

    @Test("Many events handed over at once wake it at once, idle or waiting for its timer, and all arrive")
    func handedOverAtOnce() throws {
        let packet = try Self.packet()
        for waitingForTimer in [false, true] {
            let target = DispatchQueue(label: "test.target")
            let counter = Counter()
            let queue = QueuedSink(counter, label: "test", coalescing: 600, target: target)
            if waitingForTimer { try queue.receive(.packet(packet)) }
            Self.settle(target)
            #expect(counter.received.withLock { $0 } == 0)
            try queue.receive(contentsOf: Array(repeating: .packet(packet), count: 10))
            Self.settle(target)
            #expect(counter.received.withLock { $0 } == (waitingForTimer ? 11 : 10))
            try queue.receive(contentsOf: [])
            Self.settle(target)
            #expect(counter.received.withLock { $0 } == (waitingForTimer ? 11 : 10))
        }
    }

    private static func packet() throws -> Packet {
        let header = try #require(MP3FrameHeader([UInt8]([0xFF, 0xFB, 0x90, 0x64])).map { AudioFrameHeader.mpeg($0) })
        return Packet(bytes: ArraySlice(repeating: 0, count: 417), position: 0, header: header)
    }
}
