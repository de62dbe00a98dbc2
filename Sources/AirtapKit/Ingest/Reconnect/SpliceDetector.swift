import ICYWire

/// Finds where a reconnected stream picks up what was already received.
///
/// Servers like Icecast send a new client a burst of recent audio, which after a short drop
/// repeats frames airtap already has. The detector remembers the last frames of a connection
/// (a bounded tail) and, after a reconnect, drops the new connection's frames as long as they
/// equal the remembered ones in sequence. The first frame after them decides: seamless when the
/// tail's last frame was matched (nothing is missing), else a discontinuity (audio is missing, or
/// the server's burst did not reach back). Runs of identical frames (digital silence) can align
/// anywhere: a gap inside silence may pass as seamless, which costs nothing audible.
///
/// The tail is a copy in a ring of `tailLimitBytes`, not the packets' own slices: a slice keeps
/// its whole read buffer alive, and at real-time pace (a small read per slice) 512 KB of slices
/// held about 1.4 MB per station. A copy of about 400 bytes per frame costs far less than that.
package struct SpliceDetector: Sendable {
    /// Icecast's default 64 KB burst four times over: 16 s at 128 kbps.
    package let tailLimitBytes: Int
    /// The last frames passed on, as byte ranges of `ring` (`start` counts every byte
    /// remembered, so `start % ring.count` is where the frame begins). Nothing is computed per
    /// frame beyond the copy: comparing happens only after a reconnect.
    private var ring: [UInt8] = []
    private var written = 0
    private var tail: [(start: Int, count: Int)] = []
    private var tailStart = 0
    private var state = State.following

    package enum State: Sendable, Hashable {
        /// Streaming: remembering frames.
        case following
        /// Reconnected: the next frame decides.
        case awaitingFirstFrame
        /// The new connection repeats the tail; `next` is the tail index expected next
        /// (the tail's count once all of it was matched: the next frame is the first new one).
        case matching(next: Int)
    }

    package enum Verdict: Sendable, Hashable {
        /// Not a reconnect, or already decided: pass the frame on.
        case new
        /// The frame repeats one already received: drop it.
        case duplicate
        /// The new connection continues exactly where the old one stopped: pass on, no gap.
        case spliced
        /// Audio is missing before this frame: mark a discontinuity, then pass it on.
        case discontinuity
    }

    package init(tailLimitBytes: Int = 256 * 1024) {
        self.tailLimitBytes = max(0, tailLimitBytes)
    }

    /// A reconnect happened: the next frames are compared with the tail.
    package mutating func reconnected() {
        state = .awaitingFirstFrame
    }

    /// Classifies a frame of the stream, in order, and remembers it unless it is a duplicate.
    package mutating func classify(_ bytes: ArraySlice<UInt8>) -> Verdict {
        let verdict: Verdict
        switch state {
        case .following:
            verdict = .new
        case .awaitingFirstFrame:
            if let index = lastIndex(of: bytes) {
                verdict = advance(matched: index)
            } else {
                // Nothing to match against, or the burst starts after our last frame.
                state = .following
                verdict = tail.count > tailStart ? .discontinuity : .new
            }
        case .matching(let next) where next >= tail.count:
            state = .following
            verdict = .spliced
        case .matching(let next):
            if remembered(next, equals: bytes) {
                verdict = advance(matched: next)
            } else {
                state = .following
                verdict = .discontinuity
            }
        }
        if verdict != .duplicate { remember(bytes) }
        return verdict
    }

    private mutating func advance(matched index: Int) -> Verdict {
        state = .matching(next: index + 1)
        return .duplicate
    }

    private func lastIndex(of bytes: ArraySlice<UInt8>) -> Int? {
        var index = tail.count - 1
        while index >= tailStart {
            if remembered(index, equals: bytes) { return index }
            index -= 1
        }
        return nil
    }

    /// Whether the remembered frame `index` is `bytes`, byte for byte (it may wrap round the ring).
    private func remembered(_ index: Int, equals bytes: ArraySlice<UInt8>) -> Bool {
        let frame = tail[index]
        guard frame.count == bytes.count else { return false }
        let offset = frame.start % ring.count
        let firstPart = min(frame.count, ring.count - offset)
        let split = bytes.startIndex + firstPart
        return ring[offset..<offset + firstPart].elementsEqual(bytes[..<split])
            && ring[0..<frame.count - firstPart].elementsEqual(bytes[split...])
    }

    private mutating func remember(_ bytes: ArraySlice<UInt8>) {
        if bytes.isEmpty { return }
        guard bytes.count <= tailLimitBytes else {
            // Nothing that long is a frame: forget everything rather than keep a torn tail.
            tailStart = tail.count
            return
        }
        if ring.isEmpty { ring = [UInt8](repeating: 0, count: tailLimitBytes) }
        let offset = written % ring.count
        let firstPart = min(bytes.count, ring.count - offset)
        let split = bytes.startIndex + firstPart
        ring.withUnsafeMutableBytes { ring in
            bytes[..<split].withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: ring[offset...]).copyMemory(from: $0) }
            bytes[split...].withUnsafeBytes { ring.copyMemory(from: $0) }
        }
        tail.append((start: written, count: bytes.count))
        written += bytes.count
        // Frames the ring has written over are forgotten.
        while tailStart < tail.count, tail[tailStart].start < written - ring.count {
            tailStart += 1
        }
        // Compact now and then, so the array does not grow with the stream.
        if tailStart > 1024, tailStart * 2 > tail.count {
            tail.removeFirst(tailStart)
            tailStart = 0
        }
    }
}
