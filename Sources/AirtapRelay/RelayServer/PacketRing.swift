import NIOCore

/// The shared ring of recent packets: every listener reads it at its own position, so a slow
/// listener costs nothing but its position, and memory is this ring whatever listeners do.
///
/// An entry is a run of whole frames (what arrived between two drains of the mailbox, under one
/// title), so any entry is a frame boundary to start or skip to. Sequence numbers grow without
/// gaps for the life of the server (across upstream reconnects).
/// Loop-confined (it lives in the `RelayHub`).
struct PacketRing {
    struct Entry {
        let sequence: Int
        /// The frames' bytes, copied once on the ingest side; every listener writes this buffer.
        let audio: ByteBuffer
        /// Seconds of audio appended before this packet: spans are differences, no summing loop.
        let startTime: Double
        let duration: Double
        /// The title in effect for this packet.
        let title: TitleBlock
        /// The codec epoch it belongs to (`formatEpoch` when it was appended).
        let format: Int
    }

    /// The ring keeps at most this much audio...
    let capacitySeconds: Double
    /// ...and at most this many bytes, whatever the frames claim about their duration.
    let capacityBytes: Int

    private var entries = CircularBuffer<Entry>(initialCapacity: 1024)
    /// The sequence the next appended packet gets.
    private(set) var nextSequence = 0
    private(set) var byteCount = 0
    private var appendedSeconds = 0.0
    /// The title the next packet will carry.
    private(set) var title = TitleBlock.none
    /// Counts codec changes: a listener's response carries one codec, so it ends where the
    /// epoch of the packets it reads changes.
    private(set) var formatEpoch = 0
    /// The first sequence of the current epoch: a burst never reaches back before it, so a new
    /// listener's head (its Content-Type) names what follows it.
    private(set) var formatStart = 0

    init(capacitySeconds: Double, capacityBytes: Int) {
        self.capacitySeconds = capacitySeconds
        self.capacityBytes = capacityBytes
    }

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var oldestSequence: Int { entries.first?.sequence ?? nextSequence }
    var newestSequence: Int? { entries.last?.sequence }

    /// Seconds of audio held now.
    var seconds: Double {
        guard let first = entries.first else { return 0 }
        return appendedSeconds - first.startTime
    }

    mutating func append(audio: ByteBuffer, duration: Double) {
        entries.append(Entry(sequence: nextSequence, audio: audio, startTime: appendedSeconds, duration: duration, title: title,
                             format: formatEpoch))
        nextSequence += 1
        byteCount += audio.readableBytes
        appendedSeconds += duration
        // The newest packet always stays, however large: a listener must always have a live edge.
        while entries.count > 1, seconds > capacitySeconds || byteCount > capacityBytes {
            byteCount -= entries.removeFirst().audio.readableBytes
        }
    }

    /// Packets appended from now on are of another codec.
    mutating func startFormat() {
        formatEpoch += 1
        formatStart = nextSequence
    }

    /// The epoch a listener starting at `sequence` reads.
    func format(at sequence: Int) -> Int {
        entry(sequence)?.format ?? formatEpoch
    }

    /// Packets appended from now on carry this title.
    mutating func changeTitle(to bytes: ByteBuffer) {
        title = TitleBlock(id: title.id + 1, bytes: bytes)
    }

    /// The packet with this sequence number, if the ring still (or already) holds it.
    func entry(_ sequence: Int) -> Entry? {
        let offset = sequence - oldestSequence
        guard offset >= 0, offset < entries.count else { return nil }
        return entries[offset: offset]
    }

    /// Ogg: the entry the current link starts with (its header pages). A burst never reaches
    /// back before it: a listener gets one link's pages, after that link's headers.
    var linkStart: Int?

    /// Where a new listener starts: the oldest packet from which at most `seconds` of audio lead
    /// to the live edge (at least the newest packet), not before `linkStart`. `nextSequence`
    /// when the ring is empty.
    func burstStart(seconds: Double) -> Int {
        let start = max(timedBurstStart(seconds: seconds), formatStart)
        guard let linkStart else { return start }
        if linkStart >= start, linkStart <= (newestSequence ?? start) { return linkStart }
        // Inside a link: from the first entry whose first page is an audio page (granule position
        // not 0: the link's header pages, sent apart, are not repeated) that starts a packet (flag
        // "continued" clear), so a decoder never sees the tail of a packet whose start it missed.
        var sequence = start
        while let entry = entry(sequence) {
            let base = entry.audio.readerIndex
            let flags = entry.audio.getInteger(at: base + 5, as: UInt8.self) ?? 0
            let granule = entry.audio.getInteger(at: base + 6, endianness: .little, as: Int64.self) ?? 0
            if flags & 1 == 0, granule != 0 { return sequence }
            sequence += 1
        }
        return nextSequence
    }

    private func timedBurstStart(seconds: Double) -> Int {
        guard !entries.isEmpty else { return nextSequence }
        // Entries are in startTime order: binary search for the first one late enough.
        let earliest = appendedSeconds - seconds
        var low = 0, high = entries.count - 1
        while low < high {
            let middle = (low + high) / 2
            if entries[offset: middle].startTime >= earliest - 1e-9 { high = middle } else { low = middle + 1 }
        }
        return entries[offset: low].sequence
    }
}
