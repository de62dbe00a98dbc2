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
public struct SpliceDetector: Sendable {
    /// Enough for Icecast's default 64 KB burst at any bitrate, and a few seconds more.
    public let tailLimitBytes: Int
    /// The last frames passed on. Nothing is computed per frame: comparing happens only after a
    /// reconnect, where a length check and an early-exit byte compare are cheap.
    private var tail: [ArraySlice<UInt8>] = []
    private var tailStart = 0
    private var tailBytes = 0
    private var state = State.following

    public enum State: Sendable, Hashable {
        /// Streaming: remembering frames.
        case following
        /// Reconnected: the next frame decides.
        case awaitingFirstFrame
        /// The new connection repeats the tail; `next` is the tail index expected next
        /// (the tail's count once all of it was matched: the next frame is the first new one).
        case matching(next: Int)
    }

    public enum Verdict: Sendable, Hashable {
        /// Not a reconnect, or already decided: pass the frame on.
        case new
        /// The frame repeats one already received: drop it.
        case duplicate
        /// The new connection continues exactly where the old one stopped: pass on, no gap.
        case spliced
        /// Audio is missing before this frame: mark a discontinuity, then pass it on.
        case discontinuity
    }

    public init(tailLimitBytes: Int = 512 * 1024) {
        self.tailLimitBytes = tailLimitBytes
    }

    /// A reconnect happened: the next frames are compared with the tail.
    public mutating func reconnected() {
        state = .awaitingFirstFrame
    }

    /// Classifies a frame of the stream, in order, and remembers it unless it is a duplicate.
    public mutating func classify(_ bytes: ArraySlice<UInt8>) -> Verdict {
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
            if tail[next] == bytes {
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
            if tail[index].count == bytes.count, tail[index] == bytes { return index }
            index -= 1
        }
        return nil
    }

    private mutating func remember(_ bytes: ArraySlice<UInt8>) {
        tail.append(bytes)
        tailBytes += bytes.count
        while tailBytes > tailLimitBytes, tailStart < tail.count {
            tailBytes -= tail[tailStart].count
            tailStart += 1
        }
        // Compact now and then, so the array does not grow with the stream.
        if tailStart > 1024, tailStart * 2 > tail.count {
            tail.removeFirst(tailStart)
            tailStart = 0
        }
    }
}
