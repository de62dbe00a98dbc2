/// The undecided bytes of an incremental reader (a framer): what has arrived and not yet
/// been consumed, with the stream offset of each byte, and how many bytes must be readable
/// before parsing again is worth it.
///
/// Readers hand out results as slices of `storage` (no copy per packet or page). Consumed
/// bytes are dropped only once they outnumber the unconsumed ones, or when a slice may share
/// the storage: either way each byte is moved a bounded number of times, so the cost stays
/// linear in the stream however it is split. Appending to unshared storage allocates nothing
/// beyond the array's own amortised growth.
package struct ByteAccumulator: Sendable {
    /// Readable bytes are `storage[readIndex...]`; `storage[0]` is at stream offset `storageBase`.
    package private(set) var storage: [UInt8] = []
    package private(set) var readIndex = 0
    private var storageBase = 0
    /// Set once a slice of `storage` has been handed out: writing to it would copy it all.
    private var isShared = false
    /// Readable bytes needed before the reader can decide anything more.
    private var neededCount = 0

    package init() {}

    /// The bytes not yet consumed; their indices are `storage`'s.
    package var readable: ArraySlice<UInt8> { storage[readIndex...] }
    package var readableCount: Int { storage.count - readIndex }
    /// Stream offset of `storage[index]`.
    package func streamOffset(of index: Int) -> Int { storageBase + index }
    /// Stream offset of the first readable byte.
    package var readOffset: Int { storageBase + readIndex }
    /// Whether enough bytes have arrived since the reader last asked for more.
    package var hasNeededBytes: Bool { readableCount >= neededCount }

    package mutating func append(_ bytes: some Collection<UInt8>) {
        compactIfWorthIt(adding: bytes.count)
        storage.append(contentsOf: bytes)
    }

    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compactIfWorthIt(adding: bytes.count)
        storage.append(contentsOf: bytes)
    }

    /// Marks the first `count` readable bytes as decided.
    package mutating func consume(_ count: Int) {
        precondition(count >= 0 && count <= readableCount, "consume beyond the readable bytes")
        readIndex += count
        neededCount = 0
    }

    /// Moves the read index to `index` of `storage` (at or after the current one).
    package mutating func consume(upTo index: Int) {
        consume(index - readIndex)
    }

    /// The reader cannot decide anything until `count` bytes are readable (counted from the
    /// read index); until then `hasNeededBytes` is false. Consuming clears it.
    package mutating func needReadable(_ count: Int) {
        neededCount = count
    }

    /// A slice of `storage` is being handed out: the next append must not write into it.
    package mutating func markShared() {
        isShared = true
    }

    /// Forgets every byte, readable or not; the next byte appended is at `streamOffset`.
    package mutating func removeAll(nextStreamOffset streamOffset: Int) {
        storage.removeAll(keepingCapacity: !isShared)
        readIndex = 0
        storageBase = streamOffset
        isShared = false
        neededCount = 0
    }

    private mutating func compactIfWorthIt(adding incoming: Int) {
        let live = readableCount
        guard isShared || readIndex > live else { return }
        storageBase += readIndex
        if isShared {
            // Copy only the live bytes into fresh storage; the handed-out slices keep the old one.
            var fresh: [UInt8] = []
            fresh.reserveCapacity(live + incoming)
            fresh.append(contentsOf: storage[readIndex...])
            storage = fresh
            isShared = false
        } else {
            storage.removeSubrange(0..<readIndex)
        }
        readIndex = 0
    }
}
