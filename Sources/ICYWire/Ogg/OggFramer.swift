/// What the Ogg framer reports, in stream order.
package enum OggFramerEvent: Sendable {
    /// A whole, CRC-checked page starting at this audio-stream offset.
    case page(OggPage, position: Int)
    /// Bytes that are not part of a valid page (joining mid-page, garbage, a corrupt page).
    case skipped(position: Int, count: Int)
}

/// Cuts a byte stream into whole Ogg pages, regaining sync after garbage: a page counts only
/// when its CRC matches, so a stray "OggS" inside audio data does not fool it.
///
/// Incremental: the events are the same however the input is split (adjacent `.skipped`
/// events aside). At most one page (`OggPage.maxLength`) plus one push is held back.
package struct OggFramer: Sendable {
    /// Undecided bytes are `buffer[start...]`; `buffer[0]` is at stream offset `bufferBase`.
    private var buffer: [UInt8] = []
    private var start = 0
    private var bufferBase = 0
    package private(set) var position = 0
    package private(set) var skippedByteCount = 0

    package init() {}

    /// Bytes held back for the next push; for tests of the memory bound.
    var bufferedByteCount: Int { buffer.count - start }

    package mutating func push(_ bytes: some Collection<UInt8>, _ emit: (OggFramerEvent) -> Void) {
        position += bytes.count
        if start > 0 {
            buffer.removeFirst(start)
            bufferBase += start
            start = 0
        }
        buffer.append(contentsOf: bytes)
        scan(emit)
    }

    /// End of stream: an unfinished page is reported as skipped; the framer is then empty.
    package mutating func finish(_ emit: (OggFramerEvent) -> Void) {
        if start < buffer.count { skip(buffer.count - start, emit) }
        buffer.removeAll()
        bufferBase = position
        start = 0
    }

    private mutating func scan(_ emit: (OggFramerEvent) -> Void) {
        while start < buffer.count {
            guard let found = Self.firstCapturePattern(in: buffer, from: start) else {
                // Keep a tail that may be the start of "OggS".
                let keep = Self.partialPatternLength(at: buffer[start...])
                skip(buffer.count - start - keep, emit)
                return
            }
            if found > start { skip(found - start, emit) }
            switch OggPage.parse(buffer[start...]) {
            case .needMore:
                return
            case .invalid:
                skip(1, emit)
            case .page(let page):
                emit(.page(page, position: bufferBase + start))
                start += page.bytes.count
            }
        }
    }

    private mutating func skip(_ count: Int, _ emit: (OggFramerEvent) -> Void) {
        guard count > 0 else { return }
        emit(.skipped(position: bufferBase + start, count: count))
        skippedByteCount += count
        start += count
    }

    private static func firstCapturePattern(in bytes: [UInt8], from offset: Int) -> Int? {
        var index = offset
        while index + 4 <= bytes.count {
            if bytes[index] == 0x4F, bytes[index + 1] == 0x67, bytes[index + 2] == 0x67, bytes[index + 3] == 0x53 {
                return index
            }
            index += 1
        }
        return nil
    }

    /// How many bytes at the end of `bytes` could begin "OggS" (0...3).
    private static func partialPatternLength(at bytes: ArraySlice<UInt8>) -> Int {
        for length in stride(from: min(3, bytes.count), to: 0, by: -1)
        where bytes.suffix(length).elementsEqual(OggPage.capturePattern.prefix(length)) {
            return length
        }
        return 0
    }
}
