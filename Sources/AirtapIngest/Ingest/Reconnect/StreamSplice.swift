import ICYWire

/// Joins a station's connections into one stream: the frames a reconnect's burst repeats are
/// dropped (`SpliceDetector`), positions go on where the last connection's audio ended, and a
/// gap is marked. A value with no I/O, tested on its own (`SpliceTests`).
struct StreamSplice {
    /// What becomes of a packet.
    enum Placement {
        /// The new connection repeats audio already passed on: drop it.
        case duplicate
        /// Pass it on (positions moved onto the joined stream); `join` when it is the first new
        /// frame after a reconnect.
        case packet(Packet, join: Join?)
    }

    enum Join: Sendable, Hashable {
        /// The new connection picked up exactly where the old one stopped.
        case seamless(repeatedFrames: Int)
        /// Audio is missing before the packet, at `position` of the joined stream.
        case gap(position: Int, repeatedFrames: Int)
    }

    private var detector = SpliceDetector()
    /// Audio bytes passed on so far: where the joined stream ends.
    private(set) var end = 0
    /// Added to this connection's positions; nil until its first frame that is passed on.
    private var positionOffset: Int?
    private var repeatedFrames = 0

    /// A connection began streaming: its positions start from 0 again.
    mutating func connectionStarted() {
        positionOffset = nil
    }

    /// The connection dropped and another will follow: its first frames are matched against the tail.
    mutating func reconnecting() {
        detector.reconnected()
        repeatedFrames = 0
    }

    mutating func place(_ packet: Packet) -> Placement {
        let join: Join?
        switch detector.classify(packet.bytes) {
        case .duplicate:
            repeatedFrames += 1
            return .duplicate
        case .spliced:
            join = .seamless(repeatedFrames: repeatedFrames)
        case .discontinuity:
            join = .gap(position: end, repeatedFrames: repeatedFrames)
        case .new:
            join = nil
        }
        let offset = positionOffset ?? (end - packet.position)
        positionOffset = offset
        let moved = offset == 0 ? packet : Packet(bytes: packet.bytes, position: packet.position + offset, header: packet.header)
        end = moved.position + moved.bytes.count
        return .packet(moved, join: join)
    }

    /// Where a title at `position` of this connection sits in the joined stream (before this
    /// connection's first frame: at the end so far).
    func position(ofConnectionPosition position: Int) -> Int {
        positionOffset.map { position + $0 } ?? end
    }
}
