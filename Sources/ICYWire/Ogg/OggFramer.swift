/// What the Ogg framer reports, in stream order.
enum OggFramerEvent: Sendable {
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
struct OggFramer: Sendable {
    private var input = ByteAccumulator()
    package private(set) var position = 0
    package private(set) var skippedByteCount = 0
    /// How many times a page was parsed; for tests that the cost is linear however bytes arrive.
    private(set) var parseAttemptCount = 0

    package init() {}

    /// Bytes held back for the next push; for tests of the memory bound.
    var bufferedByteCount: Int { input.readableCount }

    package mutating func push(_ bytes: some Collection<UInt8>, _ emit: (OggFramerEvent) -> Void) {
        position += bytes.count
        input.append(bytes)
        // A partial page said how long it is: nothing changes until that much has arrived.
        guard input.hasNeededBytes else { return }
        scan(emit)
    }

    /// End of stream: an unfinished page is reported as skipped; the framer is then empty.
    package mutating func finish(_ emit: (OggFramerEvent) -> Void) {
        if input.readableCount > 0 { skip(input.readableCount, emit) }
        input.removeAll(nextStreamOffset: position)
    }

    private mutating func scan(_ emit: (OggFramerEvent) -> Void) {
        let buffer = input.storage
        while input.readIndex < buffer.count {
            let start = input.readIndex
            guard let found = Self.firstCapturePattern(in: buffer, from: start) else {
                // Keep a tail that may be the start of "OggS".
                let keep = Self.partialPatternLength(at: buffer[start...])
                skip(buffer.count - start - keep, emit)
                return
            }
            if found > start { skip(found - start, emit) }
            parseAttemptCount += 1
            switch OggPage.parse(buffer[found...]) {
            case .needMore(let length):
                input.needReadable(length)
                return
            case .invalid:
                skip(1, emit)
            case .page(let page):
                emit(.page(page, position: input.streamOffset(of: found)))
                input.markShared()
                input.consume(page.bytes.count)
            }
        }
    }

    private mutating func skip(_ count: Int, _ emit: (OggFramerEvent) -> Void) {
        guard count > 0 else { return }
        emit(.skipped(position: input.readOffset, count: count))
        skippedByteCount += count
        input.consume(count)
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
