import DequeModule
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
/// The tail holds each frame's length and a 64-bit digest of it (a multiply-mix of 8-byte words,
/// seeded per detector), not the bytes: 16 bytes a frame, 10-40 KB a station for 16 s at
/// 128 kbps: a ring of copied bytes would take 256 KB a station, and keeping the packets' own
/// slices would keep every read buffer alive. The digest reads a frame's first `headBytes` whole
/// (the header and MPEG audio's side info, where two quiet frames differ), then every fourth
/// 8-byte word and the last 8 bytes; a frame too short for that is read whole. Hashing every
/// byte would cost more than anything else the ingest does to a frame. For a new frame to be
/// taken for a repeat, two different frames of the same length would have to agree in all that
/// was read, which compressed audio does only where it repeats itself (digital silence, see
/// above). At worst a frame right after a reconnect is dropped as a repeat; a station that
/// crafts such frames on purpose can do no more than that to its own audio.
struct SpliceDetector: Sendable {
    /// Audio the tail covers: Icecast's default 64 KB burst four times over, 16 s at 128 kbps.
    package let tailLimitBytes: Int
    /// The last frames passed on, oldest first.
    private var tail = Deque<(digest: Int, count: Int)>()
    /// Bytes of the frames in `tail`.
    private var tailBytes = 0
    private var state = State.following
    /// Chosen per detector: which frames a station would have to craft to be taken for
    /// repeats is not known in advance.
    private let seed = UInt64.random(in: .min ... .max)

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
        let frame = (digest: Self.digest(bytes, seed: seed), count: bytes.count)
        let verdict: Verdict
        switch state {
        case .following:
            verdict = .new
        case .awaitingFirstFrame:
            if let index = lastIndex(of: frame) {
                verdict = advance(matched: index)
            } else {
                // Nothing to match against, or the burst starts after our last frame.
                state = .following
                verdict = tail.isEmpty ? .new : .discontinuity
            }
        case .matching(let next) where next >= tail.count:
            state = .following
            verdict = .spliced
        case .matching(let next):
            if tail[next] == frame {
                verdict = advance(matched: next)
            } else {
                state = .following
                verdict = .discontinuity
            }
        }
        if verdict != .duplicate { remember(frame) }
        return verdict
    }

    /// Bytes read whole at a frame's start: an MPEG audio header, its CRC and up to 32 bytes of
    /// side info.
    static let headBytes = 40
    /// Bytes from one sampled 8-byte word of a frame to the next, after its head.
    static let sampleStride = 32

    private static func digest(_ bytes: ArraySlice<UInt8>, seed: UInt64) -> Int {
        bytes.withUnsafeBytes { raw in
            var hash = seed ^ UInt64(raw.count)
            var offset = 0
            let wholeUpTo = raw.count > headBytes + sampleStride ? headBytes : raw.count
            while offset + 8 <= wholeUpTo {
                mix(&hash, raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
            }
            if wholeUpTo == raw.count {
                // A short frame: its last bytes, fewer than a word, make one more.
                var last: UInt64 = 0
                for byte in raw[offset...] { last = last << 8 | UInt64(byte) }
                mix(&hash, last)
                return Int(truncatingIfNeeded: hash)
            }
            while offset + 8 <= raw.count {
                mix(&hash, raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += sampleStride
            }
            mix(&hash, raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self))
            return Int(truncatingIfNeeded: hash)
        }
    }

    /// Each step is a bijection of the state for a given word (xor, an odd multiplier, an
    /// xor-shift) and of the word for a given state: two frames that differ in one word read
    /// never collide. A multiply per word, where SipHash took a round of it.
    private static func mix(_ hash: inout UInt64, _ word: UInt64) {
        hash = (hash ^ word) &* 0x9E37_79B9_7F4A_7C15
        hash ^= hash >> 31
    }

    private mutating func advance(matched index: Int) -> Verdict {
        state = .matching(next: index + 1)
        return .duplicate
    }

    private func lastIndex(of frame: (digest: Int, count: Int)) -> Int? {
        tail.lastIndex { $0 == frame }
    }

    /// Called only while following (a duplicate is not remembered, every other verdict leaves
    /// the state at `.following`), so no `matching(next:)` index moves when the oldest leave.
    private mutating func remember(_ frame: (digest: Int, count: Int)) {
        if frame.count == 0 { return }
        guard frame.count <= tailLimitBytes else {
            // Nothing that long is a frame: forget everything rather than keep a torn tail.
            tail.removeAll(keepingCapacity: true)
            tailBytes = 0
            return
        }
        tail.append(frame)
        tailBytes += frame.count
        // The oldest frames leave once the tail covers more than its limit.
        while tailBytes > tailLimitBytes, let oldest = tail.popFirst() {
            tailBytes -= oldest.count
        }
    }
}
