/// Whether the audio after a metadata block goes on where the audio before it left off.
///
/// A server cuts its audio into intervals at any byte, so a frame (MPEG audio, ADTS) or an Ogg
/// page usually runs across a block: the whole units in the last bytes before the block say
/// where the next one starts, and a block that really ended where it ended puts a header of
/// the same stream exactly there. It reads only audio, never the block, so no title can sway
/// it; a block that ended elsewhere moves the header off that spot.
struct AudioContinuity {
    enum Unit {
        case frame(AudioFrameHeader)
        case oggPage

        func admits(_ other: Unit) -> Bool {
            switch (self, other) {
            case (.frame(let a), .frame(let b)): a.isCompatible(with: b)
            case (.oggPage, .oggPage): true
            default: false
            }
        }
    }

    /// How many audio bytes before a block are kept to find the chain: two frames of the
    /// largest MPEG audio and of common ADTS, and an Ogg page of a typical stream.
    static let tailLength = 8 * 1024
    /// A chain of this many whole units before the block is needed: one header alone may be
    /// chance bytes in the audio.
    static let unitsNeeded = 2

    /// Where the next unit starts, counted from the start of the tail: at or past its end when
    /// the last unit runs across the block; before it when that unit's header is cut by it.
    let nextUnit: Int
    /// The chain's first unit, which the next must match.
    let unit: Unit

    /// The first chain of `unitsNeeded` units or more in `tail` (the audio right before a
    /// block) that runs on, unbroken, to its end; nil when there is none, or when finding it
    /// would take more than a few looks per byte (a station can send chains of tiny frames that
    /// break just before the end, from every start).
    init?(tail: [UInt8]) {
        var budget = 4 * tail.count
        var start = 0
        while start < tail.count && budget > 0 {
            budget -= 1
            let probed = Self.probe(tail, at: start)
            budget -= Self.checkCost(probed)
            if case .whole(let length, let first) = probed,
               let next = Self.endOfChain(tail, from: start + length, first: first, budget: &budget),
               next.units + 1 >= Self.unitsNeeded {
                self.nextUnit = next.position
                self.unit = first
                return
            }
            start += 1
        }
        return nil
    }

    /// Where the chain from `position` leaves `tail`, and its units after the first; nil when
    /// it breaks inside.
    private static func endOfChain(_ tail: [UInt8], from position: Int, first: Unit, budget: inout Int) -> (position: Int, units: Int)? {
        var position = position
        var units = 0
        while position < tail.count {
            guard budget > 0 else { return nil }
            budget -= 1
            let probed = probe(tail, at: position)
            budget -= checkCost(probed)
            switch probed {
            case .whole(let length, let unit) where first.admits(unit):
                units += 1
                position += length
            case .cut:
                return (position, units)
            default:
                return nil
            }
        }
        return (position, units)
    }

    /// Whether the audio from `end` on (`bytes[end..<limit]`, the audio the block would be
    /// followed by if it ended at `end`; `tail` is the audio before it) has the next unit where
    /// the chain says; nil when the bytes to tell are not there. A header that runs across the
    /// block may have only its last bytes after it, and almost any bytes complete it, so then the
    /// unit after it must be there too; and so must a frame's after any frame header, which is
    /// only four bytes of which few are fixed. An Ogg page's capture pattern and version, five
    /// fixed bytes wholly after the block, are enough alone.
    func continues(after end: Int, in bytes: [UInt8], limit: Int, tail: [UInt8]) -> Bool? {
        let headerBytes = OggPage.headerLength + 255
        var position = nextUnit
        for _ in 0..<2 {
            let header: ArraySlice<UInt8>
            let wholeAfterBlock = position >= tail.count
            if wholeAfterBlock {
                let start = end + position - tail.count
                guard start < limit else { return nil }
                header = bytes[start..<min(limit, start + headerBytes)]
            } else {
                header = ArraySlice(tail[position...] + bytes[end..<min(limit, end + headerBytes)])
            }
            switch Self.probeHeader(header) {
            case .whole(let length, let found):
                guard unit.admits(found) else { return false }
                if wholeAfterBlock, case .oggPage = found { return true }
                position += length
            case .cut: return nil
            case .invalid: return false
            }
        }
        return true
    }

    /// What a probe cost beyond one look: an Ogg page wholly in the tail had its CRC checked
    /// over all its bytes, and a station can nest page headers inside page bodies so that every
    /// `O` starts one; charged by its length, the checks stay a few times the tail's bytes.
    private static func checkCost(_ probed: Probe) -> Int {
        if case .whole(let length, .oggPage) = probed { length / 4 } else { 0 }
    }

    enum Probe {
        /// A unit of `length` bytes starts here (it may run past the bytes given).
        case whole(length: Int, Unit)
        /// A header's beginning that the bytes end inside.
        case cut
        case invalid
    }

    static func probe(_ bytes: [UInt8], at position: Int) -> Probe {
        switch bytes[position] {
        case 0xFF:
            return probeHeader(bytes[position...])
        case UInt8(ascii: "O"):
            switch OggPage.parse(bytes[position...]) {
            case .page(let page): return .whole(length: page.bytes.count, .oggPage)
            case .needMore(let length):
                // Past its segment table, `length` is the whole page's: the page runs on past the bytes.
                let available = bytes.count - position
                guard available >= OggPage.headerLength, available >= OggPage.headerLength + Int(bytes[position + 26]) else {
                    return .cut
                }
                return .whole(length: length, .oggPage)
            case .invalid: return .invalid
            }
        default:
            return .invalid
        }
    }

    /// A frame header or an Ogg page header (with its segment table, for the page's length) at
    /// the start of `bytes`, without its body.
    static func probeHeader(_ bytes: ArraySlice<UInt8>) -> Probe {
        guard let first = bytes.first else { return .cut }
        if first == UInt8(ascii: "O") {
            let start = bytes.startIndex
            let capture: [UInt8] = Array("OggS".utf8) + [0]
            guard bytes.prefix(capture.count).elementsEqual(capture.prefix(bytes.count)) else { return .invalid }
            guard bytes.count > capture.count else { return .cut }
            guard bytes[start + capture.count] & ~0x07 == 0 else { return .invalid }
            guard bytes.count >= OggPage.headerLength else { return .cut }
            let segments = Int(bytes[start + 26])
            let table = start + OggPage.headerLength
            guard bytes.count >= OggPage.headerLength + segments else { return .cut }
            let bodyLength = bytes[table..<(table + segments)].reduce(0) { $0 + Int($1) }
            return .whole(length: OggPage.headerLength + segments + bodyLength, .oggPage)
        }
        return bytes.prefix(8).withUnsafeBytes { raw in
            switch AudioFrameHeader.probe(raw, at: 0) {
            case .found(let header): .whole(length: header.frameLength, .frame(header))
            case .needMoreBytes: .cut
            case .invalid: .invalid
            }
        }
    }
}
