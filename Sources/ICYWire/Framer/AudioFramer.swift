/// What the framer reports, in stream order.
package enum FramerEvent: Sendable {
    case packet(Packet)
    case id3Tag(ID3v2Tag)
    /// Bytes dropped: garbage, truncated frames, an incomplete tail, or a tag over the size limit.
    /// One contiguous run may arrive as several adjacent events when it spans pushes.
    case skipped(position: Int, count: Int)
    /// Sent before the first packet, and before the first packet after any garbage was
    /// skipped or sync was lost: a consumer can treat it as "discontinuity, new format".
    case synced(AudioFrameHeader)
}

/// Cuts an audio byte stream (ICY metadata already removed) into whole MPEG or ADTS frames,
/// finding and regaining sync, and lifting out in-stream ID3v2 tags.
///
/// Incremental: bytes may arrive split anywhere, and the events are the same however the
/// stream is split (adjacent `.skipped` events aside). Each push builds one work array and
/// hands out packets as slices of it; only the unfinished tail is carried to the next push.
package struct AudioFramer: Sendable {
    package enum State: Sendable {
        /// Looking for two consecutive compatible headers (or a tag).
        case searching
        /// Following a chain of frames compatible with this header.
        case locked(AudioFrameHeader)
        /// Dropping the rest of a tag larger than `maxTagLength` as it streams past.
        case skippingTag(remaining: Int)
    }

    /// Tags up to this many bytes are buffered and reported; larger ones are skipped.
    package let maxTagLength: Int
    package private(set) var state: State = .searching
    /// Total bytes reported in `.skipped` events.
    package private(set) var skippedByteCount = 0
    /// Audio bytes pushed so far.
    package private(set) var position = 0
    /// Frames dropped because no frame header starts where they end: another stream (or
    /// garbage) cut into them. Their bytes are also in `skippedByteCount`.
    package private(set) var cutFrameCount = 0

    /// Undecided bytes; packets and tags are handed out as slices of its storage.
    private var input = ByteAccumulator()
    /// Where to go when a skipped oversized tag ends (a tag at a frame boundary keeps the lock).
    private var stateAfterTag: State = .searching
    /// Whether `.synced` was sent for the current run of frames.
    private var syncAnnounced = false
    private var pendingSkip: (position: Int, count: Int)?

    /// How many times the bytes were scanned; for tests that the cost is linear however bytes arrive.
    private(set) var scanCount = 0

    /// Bytes held back for the next push (an unfinished frame or tag); for tests of the memory bound.
    var bufferedByteCount: Int { input.readableCount }

    package init(maxTagLength: Int = 1 << 20) {
        self.maxTagLength = max(0, maxTagLength)
    }

    package mutating func push(_ bytes: UnsafeRawBufferPointer, _ emit: (FramerEvent) -> Void) {
        position += bytes.count
        var rest = bytes[...]
        if case .skippingTag(let remaining) = state {
            // The tag's bytes are dropped straight from the input: never buffered.
            let count = min(remaining, bytes.count)
            let tagPosition = input.streamOffset(of: input.storage.count)
            input.removeAll(nextStreamOffset: tagPosition + count)
            skip(position: tagPosition, count: count, isGarbage: false)
            state = remaining == count ? stateAfterTag : .skippingTag(remaining: remaining - count)
            rest = rest.dropFirst(count)
        }
        if !rest.isEmpty {
            input.append(UnsafeRawBufferPointer(rebasing: rest))
            // An unfinished frame said how long it is: nothing changes until that much has arrived.
            if input.hasNeededBytes { scan(isFinal: false, emit) }
        }
        flushSkip(emit)
    }

    /// End of stream: emits a final frame that is complete and reports an incomplete tail as
    /// skipped. The framer is then empty and searching, ready for a new stream.
    package mutating func finish(_ emit: (FramerEvent) -> Void) {
        if case .skippingTag = state {
            state = .searching
        }
        scan(isFinal: true, emit)
        let tail = input.readableCount
        if tail > 0 {
            skip(position: input.readOffset, count: tail, isGarbage: true)
        }
        flushSkip(emit)
        input.removeAll(nextStreamOffset: position)
        state = .searching
        stateAfterTag = .searching
        syncAnnounced = false
    }

    package mutating func push(_ bytes: [UInt8]) -> [FramerEvent] {
        var events: [FramerEvent] = []
        bytes.withUnsafeBytes { raw in push(raw) { events.append($0) } }
        return events
    }

    package mutating func finish() -> [FramerEvent] {
        var events: [FramerEvent] = []
        finish { events.append($0) }
        return events
    }

    // MARK: - Scanning

    private enum Step { case progressed, needMoreBytes }

    private mutating func scan(isFinal: Bool, _ emit: (FramerEvent) -> Void) {
        scanCount += 1
        // A second reference for the scan; it is released before the next append.
        let work = input.storage
        work.withUnsafeBytes { raw in
            while true {
                let step: Step
                switch state {
                case .searching: step = searchStep(raw, work, isFinal, emit)
                case .locked(let lock): step = lockedStep(lock, raw, work, isFinal, emit)
                case .skippingTag: step = .needMoreBytes
                }
                if case .needMoreBytes = step { return }
            }
        }
    }

    private mutating func searchStep(
        _ raw: UnsafeRawBufferPointer, _ work: [UInt8], _ isFinal: Bool, _ emit: (FramerEvent) -> Void
    ) -> Step {
        let end = raw.count
        var i = input.readIndex
        // Only 0xFF (frame sync) and "I" (ID3) can start anything.
        while i < end && raw[i] != 0xFF && raw[i] != 0x49 { i += 1 }
        skipGarbage(upTo: i)
        guard i < end else { return .needMoreBytes }

        switch probeTag(raw, at: i, isFinal) {
        case .found(let tag): return takeTag(tag, at: i, raw, work, isFinal, emit)
        case .needMoreBytes: return .needMoreBytes
        case .invalid: break
        }
        switch chainStart(raw, at: i, compatibleWith: nil, acceptingLoneFinalFrame: isFinal) {
        case .found(let header):
            state = .locked(header)
            syncAnnounced = false
            return .progressed
        case .needMoreBytes:
            return .needMoreBytes
        case .invalid:
            skipGarbage(upTo: i + 1)
            return .progressed
        }
    }

    private mutating func lockedStep(
        _ lock: AudioFrameHeader, _ raw: UnsafeRawBufferPointer, _ work: [UInt8], _ isFinal: Bool,
        _ emit: (FramerEvent) -> Void
    ) -> Step {
        let end = raw.count
        let i = input.readIndex
        let header: AudioFrameHeader
        switch probeAudio(raw, at: i, isFinal) {
        case .found(let found) where found.isCompatible(with: lock):
            header = found
        case .needMoreBytes:
            return .needMoreBytes
        case .found, .invalid:
            // Only reachable at the start of a push or after a tag: the bytes at a frame
            // boundary are checked before the frame ahead of them is emitted.
            switch probeTag(raw, at: i, isFinal) {
            case .found(let tag): return takeTag(tag, at: i, raw, work, isFinal, emit)
            case .needMoreBytes: return .needMoreBytes
            case .invalid: break
            }
            enterSearching()
            return .progressed
        }
        let next = i + header.frameLength
        guard next <= end else {
            // The frame and the first byte of what follows it.
            input.needReadable(next - i + 1)
            return .needMoreBytes
        }

        // One frame of lookahead. At the end of the stream, too few bytes for a header
        // behind a complete frame mean the frame is the last one.
        switch AudioFrameHeader.probe(raw, at: next) {
        case .found(let nextHeader) where nextHeader.isCompatible(with: lock):
            emitPacket(i..<next, header, work, emit)
            return .progressed
        case .needMoreBytes:
            guard isFinal else { return .needMoreBytes }
            emitPacket(i..<next, header, work, emit)
            return .progressed
        case .found, .invalid:
            break
        }
        switch probeTag(raw, at: next, false) {
        case .found:
            emitPacket(i..<next, header, work, emit)
            return .progressed
        case .needMoreBytes:
            guard isFinal else { return .needMoreBytes }
            emitPacket(i..<next, header, work, emit)
            return .progressed
        case .invalid:
            break
        }
        return unfollowedStep(lock, header, i..<next, raw, work, isFinal, emit)
    }

    /// `frame` is whole but no compatible frame or tag follows it: either it was cut short and
    /// the stream continues inside it, or it is whole and garbage follows.
    @inline(__always)
    private mutating func unfollowedStep(
        _ lock: AudioFrameHeader, _ header: AudioFrameHeader, _ frame: Range<Int>, _ raw: UnsafeRawBufferPointer,
        _ work: [UInt8], _ isFinal: Bool, _ emit: (FramerEvent) -> Void
    ) -> Step {
        let (i, next) = (frame.lowerBound, frame.upperBound)
        for j in (i + 1)..<next {
            switch probeTag(raw, at: j, isFinal) {
            case .found:
                skipGarbage(upTo: j)
                return .progressed  // the next step takes the tag
            case .needMoreBytes:
                return .needMoreBytes
            case .invalid:
                break
            }
            switch chainStart(raw, at: j, compatibleWith: lock, acceptingLoneFinalFrame: false, isFinal) {
            case .found:
                cutFrameCount += 1
                skipGarbage(upTo: j)
                return .progressed
            case .needMoreBytes:
                return .needMoreBytes
            case .invalid:
                continue
            }
        }
        // Frame i is whole, but no compatible frame or tag starts where it ends. A header of
        // another format starting exactly there (a switch at a frame boundary) keeps it;
        // anything else may be another stream that cut into it (a fallback mount, a splice),
        // and a stitched frame plays as a click that nothing downstream can detect: drop it.
        switch probeAudio(raw, at: next, isFinal) {
        case .found:
            emitPacket(i..<next, header, work, emit)
        case .needMoreBytes:
            return .needMoreBytes
        case .invalid:
            cutFrameCount += 1
            skipGarbage(upTo: next)
        }
        enterSearching()
        return .progressed
    }

    /// Whether a valid header at `offset` is followed by a compatible one a frame later.
    /// At the end of the stream a complete lone frame may count as a chain.
    private func chainStart(
        _ raw: UnsafeRawBufferPointer, at offset: Int, compatibleWith lock: AudioFrameHeader?,
        acceptingLoneFinalFrame: Bool, _ isFinal: Bool = false
    ) -> AudioFrameHeader.Probe {
        let header: AudioFrameHeader
        switch probeAudio(raw, at: offset, isFinal) {
        case .found(let found):
            if let lock, !found.isCompatible(with: lock) { return .invalid }
            header = found
        case .invalid: return .invalid
        case .needMoreBytes: return .needMoreBytes
        }
        let next = offset + header.frameLength
        switch probeAudio(raw, at: next, false) {
        case .found(let nextHeader):
            return nextHeader.isCompatible(with: header) ? .found(header) : .invalid
        case .invalid:
            return .invalid
        case .needMoreBytes:
            guard isFinal || acceptingLoneFinalFrame else { return .needMoreBytes }
            return acceptingLoneFinalFrame && next <= raw.count ? .found(header) : .invalid
        }
    }

    /// At the end of the stream nothing more can arrive, so a short prefix is no header.
    private func probeAudio(_ raw: UnsafeRawBufferPointer, at offset: Int, _ isFinal: Bool) -> AudioFrameHeader.Probe {
        let probe = AudioFrameHeader.probe(raw, at: offset)
        if isFinal, case .needMoreBytes = probe { return .invalid }
        return probe
    }

    private enum TagProbe { case found(ID3v2Header), invalid, needMoreBytes }

    private func probeTag(_ raw: UnsafeRawBufferPointer, at offset: Int, _ isFinal: Bool) -> TagProbe {
        let available = raw.count - offset
        for (k, letter) in zip(0..<3, "ID3".utf8) {
            guard k < available else { return isFinal ? .invalid : .needMoreBytes }
            guard raw[offset + k] == letter else { return .invalid }
        }
        guard available >= ID3v2Header.headerLength else { return isFinal ? .invalid : .needMoreBytes }
        guard let header = ID3v2Header(raw, at: offset) else { return .invalid }
        return .found(header)
    }

    private mutating func takeTag(
        _ tag: ID3v2Header, at offset: Int, _ raw: UnsafeRawBufferPointer, _ work: [UInt8], _ isFinal: Bool,
        _ emit: (FramerEvent) -> Void
    ) -> Step {
        let length = tag.totalLength
        let available = raw.count - offset
        if length <= maxTagLength {
            guard available >= length else { return .needMoreBytes }
            flushSkip(emit)
            emit(.id3Tag(ID3v2Tag(bytes: work[offset..<(offset + length)], position: input.streamOffset(of: offset), header: tag)))
            input.markShared()
            input.consume(upTo: offset + length)
            return .progressed
        }
        // Too large to hold: drop it as it streams past.
        let count = min(length, available)
        skip(position: input.streamOffset(of: offset), count: count, isGarbage: false)
        input.consume(upTo: offset + count)
        if count < length && !isFinal {
            stateAfterTag = state
            state = .skippingTag(remaining: length - count)
            return .needMoreBytes
        }
        return .progressed
    }

    // MARK: - Emitting

    private mutating func emitPacket(
        _ range: Range<Int>, _ header: AudioFrameHeader, _ work: [UInt8], _ emit: (FramerEvent) -> Void
    ) {
        flushSkip(emit)
        if !syncAnnounced {
            emit(.synced(header))
            syncAnnounced = true
        }
        emit(.packet(Packet(bytes: work[range], position: input.streamOffset(of: range.lowerBound), header: header)))
        input.markShared()
        input.consume(upTo: range.upperBound)
    }

    private mutating func enterSearching() {
        state = .searching
        syncAnnounced = false
    }

    private mutating func skipGarbage(upTo index: Int) {
        guard index > input.readIndex else { return }
        skip(position: input.readOffset, count: index - input.readIndex, isGarbage: true)
        input.consume(upTo: index)
    }

    private mutating func skip(position: Int, count: Int, isGarbage: Bool) {
        guard count > 0 else { return }
        skippedByteCount += count
        if isGarbage { syncAnnounced = false }
        if let pending = pendingSkip, pending.position + pending.count == position {
            pendingSkip = (pending.position, pending.count + count)
        } else {
            pendingSkip = (position, count)
        }
    }

    private mutating func flushSkip(_ emit: (FramerEvent) -> Void) {
        guard let pending = pendingSkip else { return }
        pendingSkip = nil
        emit(.skipped(position: pending.position, count: pending.count))
    }
}
