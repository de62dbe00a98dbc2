@testable import ICYWire

/// Framer events reduced to comparable values; adjacent `.skipped` runs merged, since a
/// run that spans pushes may be reported in pieces.
enum Observed: Equatable, CustomStringConvertible {
    case packet(position: Int, bytes: [UInt8])
    case tag(position: Int, bytes: [UInt8])
    case skipped(position: Int, count: Int)
    case synced(AudioFrameHeader)

    var description: String {
        switch self {
        case .packet(let position, let bytes): "packet(\(position), \(bytes.count) bytes)"
        case .tag(let position, let bytes): "tag(\(position), \(bytes.count) bytes)"
        case .skipped(let position, let count): "skipped(\(position), \(count))"
        case .synced(let header): "synced(\(header.codec))"
        }
    }

    static func normalize(_ events: [FramerEvent]) -> [Observed] {
        var result: [Observed] = []
        for event in events {
            switch event {
            case .packet(let packet):
                result.append(.packet(position: packet.position, bytes: Array(packet.bytes)))
            case .id3Tag(let tag):
                result.append(.tag(position: tag.position, bytes: Array(tag.bytes)))
            case .synced(let header):
                result.append(.synced(header))
            case .skipped(let position, let count):
                if case .skipped(let previous, let previousCount) = result.last, previous + previousCount == position {
                    result[result.count - 1] = .skipped(position: previous, count: previousCount + count)
                } else {
                    result.append(.skipped(position: position, count: count))
                }
            }
        }
        return result
    }
}

struct FramerRun: Equatable {
    var events: [Observed]
    var skippedByteCount: Int
    var position: Int
    /// The most bytes the framer held back between pushes.
    var maxBuffered: Int
    var cutFrameCount: Int

    init(_ chunks: [[UInt8]], maxTagLength: Int = 1 << 20) {
        var framer = AudioFramer(maxTagLength: maxTagLength)
        var raw: [FramerEvent] = []
        var maxBuffered = 0
        for chunk in chunks {
            raw += framer.push(chunk)
            maxBuffered = max(maxBuffered, framer.bufferedByteCount)
        }
        raw += framer.finish()
        events = Observed.normalize(raw)
        skippedByteCount = framer.skippedByteCount
        position = framer.position
        self.maxBuffered = maxBuffered
        cutFrameCount = framer.cutFrameCount
    }

    static func == (a: FramerRun, b: FramerRun) -> Bool {
        a.events == b.events && a.skippedByteCount == b.skippedByteCount && a.position == b.position
            && a.cutFrameCount == b.cutFrameCount
    }

    var packets: [(position: Int, bytes: [UInt8])] {
        events.compactMap { if case .packet(let p, let b) = $0 { (p, b) } else { nil } }
    }

    var tags: [(position: Int, bytes: [UInt8])] {
        events.compactMap { if case .tag(let p, let b) = $0 { (p, b) } else { nil } }
    }

    var syncedCount: Int {
        events.filter { if case .synced = $0 { true } else { false } }.count
    }

    var skippedInEvents: Int {
        events.reduce(0) { if case .skipped(_, let c) = $1 { $0 + c } else { $0 } }
    }
}

/// Where each frame of a concatenation starts.
func positions(of frames: [[UInt8]], startingAt start: Int = 0) -> [Int] {
    var result: [Int] = []
    var offset = start
    for frame in frames {
        result.append(offset)
        offset += frame.count
    }
    return result
}
