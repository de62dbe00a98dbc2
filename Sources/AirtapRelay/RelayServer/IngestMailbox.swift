import AirtapKit
import ICYWire
import NIOCore
import Locking

/// Hands ingest events to the relay's event loop. The ingest thread appends under a short lock
/// and wakes the loop once per batch; it never waits for the loop or for any listener.
final class IngestMailbox: Sendable {
    enum Item: Sendable {
        case packet(ByteBuffer, duration: Double)
        case title(ByteBuffer, raw: String)
        case head(StreamHead)
        case format(AudioFrameHeader)
        case upstream(ConnectionState)
    }

    private struct Pending {
        var items = CircularBuffer<Item>(initialCapacity: 256)
        var packetBytes = 0
        var isWakeScheduled = false
        var droppedPackets = 0
    }

    private let pending = Locked(Pending())
    /// If the loop falls this far behind, new packets are dropped rather than queued without bound.
    private let maxPacketBytes: Int

    init(maxPacketBytes: Int) {
        self.maxPacketBytes = maxPacketBytes
    }

    /// Queues `item`; true when the caller must wake the loop (no wake-up was pending yet).
    func post(_ item: Item) -> Bool {
        pending.withLock { pending in
            if case .packet(let bytes, _) = item {
                guard pending.packetBytes + bytes.readableBytes <= maxPacketBytes else {
                    pending.droppedPackets += 1
                    return false
                }
                pending.packetBytes += bytes.readableBytes
            }
            pending.items.append(item)
            defer { pending.isWakeScheduled = true }
            return !pending.isWakeScheduled
        }
    }

    /// Swaps everything queued into `batch` (which must be empty): the two buffers take turns,
    /// so steady state allocates nothing. Returns how many packets were dropped since last time.
    func take(into batch: inout CircularBuffer<Item>) -> Int {
        pending.withLock { pending in
            swap(&pending.items, &batch)
            pending.packetBytes = 0
            pending.isWakeScheduled = false
            defer { pending.droppedPackets = 0 }
            return pending.droppedPackets
        }
    }
}

/// The relay server's place among a session's sinks. Runs on the ingest thread: each packet is
/// copied once, into the `ByteBuffer` every listener will write, then posted to the loop.
struct RelayIngestSink: StreamSink {
    let mailbox: IngestMailbox
    let wake: @Sendable () -> Void
    private let allocator = ByteBufferAllocator()

    init(mailbox: IngestMailbox, wake: @escaping @Sendable () -> Void) {
        self.mailbox = mailbox
        self.wake = wake
    }

    func receive(_ event: StreamEvent) throws {
        switch event {
        case .packet(let packet):
            // The slice shares the framer's buffer: copy it now, so the framer's storage stays unique.
            post(.packet(allocator.buffer(bytes: packet.bytes), duration: packet.duration))
        case .metadata(let change):
            let block = TitleBlock.render(title: change.info.raw, url: change.info.url, allocator: allocator)
            post(.title(block, raw: change.info.raw))
        case .head(let head):
            post(.head(head))
        case .format(let header):
            post(.format(header))
        case .discontinuity:
            break
        case .ended(let reason):
            post(.upstream(.stopped(reason)))
        }
    }

    func post(_ item: IngestMailbox.Item) {
        if mailbox.post(item) { wake() }
    }
}
