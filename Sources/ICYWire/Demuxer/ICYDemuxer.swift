/// One ICY metadata block, as sent: the length byte's worth of bytes, NUL padding included (a
/// block shorter than its length byte: the bytes that really were metadata, see `deliver`).
package struct MetadataBlock: Sendable, Hashable {
    package let bytes: [UInt8]
    /// Audio bytes that came before it in the stream.
    package let position: Int

    package init(bytes: [UInt8], position: Int) {
        self.bytes = bytes
        self.position = position
    }
}

/// Splits an ICY body into audio and metadata blocks.
///
/// With `icy-metaint: N` the server sends N audio bytes, one length byte L, then L × 16
/// bytes of metadata, and again. L = 0 means "no change" and yields no block.
package struct ICYDemuxer: Sendable {
    package enum State: Sendable, Hashable {
        /// Audio bytes left before the next length byte (`Int.max` and constant when passing through).
        case audio(remaining: Int)
        case lengthByte
        case metadata(remaining: Int)
        /// A block cut inside its padding was received; the bytes after it are being collected
        /// until the next interval's length byte is in sight, to tell where the block really
        /// ended (see `MetadataBlockLayout.realEnd`).
        case lookingAhead(needed: Int, blockLength: Int)
    }

    /// Test convenience output, adjacent audio merged.
    package enum Output: Sendable, Hashable {
        case audio([UInt8])
        case metadata(MetadataBlock)
    }

    package let metaint: Int?
    package private(set) var state: State
    /// Audio bytes passed on so far.
    package private(set) var audioPosition = 0
    /// Blocks that turned out shorter than their length byte said (the rest was audio).
    package private(set) var shortBlockCount = 0
    private var pendingBlock: [UInt8] = []
    /// The cut block and the bytes after it, while `.lookingAhead`.
    private var lookahead: [UInt8] = []

    /// `nil` or a non-positive interval: no metadata, everything is audio.
    package init(metaint: Int?) {
        if let metaint, metaint > 0 {
            self.metaint = metaint
            self.state = .audio(remaining: metaint)
        } else {
            self.metaint = nil
            self.state = .audio(remaining: .max)
        }
    }

    /// Audio is handed on as slices of `chunk` (no copy); a block split across chunks is
    /// collected and delivered whole.
    package mutating func consume(
        _ chunk: UnsafeRawBufferPointer,
        onAudio: (UnsafeRawBufferPointer) -> Void,
        onMetadata: (MetadataBlock) -> Void
    ) {
        guard let metaint else {
            audioPosition += chunk.count
            if !chunk.isEmpty { onAudio(chunk) }
            return
        }
        var index = 0
        while index < chunk.count {
            switch state {
            case .audio(let remaining):
                let count = min(remaining, chunk.count - index)
                onAudio(UnsafeRawBufferPointer(rebasing: chunk[index..<(index + count)]))
                audioPosition += count
                index += count
                state = count == remaining ? .lengthByte : .audio(remaining: remaining - count)
            case .lengthByte:
                let length = Int(chunk[index]) * 16
                index += 1
                if length == 0 {
                    state = .audio(remaining: metaint)
                } else {
                    pendingBlock.reserveCapacity(length)
                    state = .metadata(remaining: length)
                }
            case .metadata(let remaining):
                let count = min(remaining, chunk.count - index)
                pendingBlock.append(contentsOf: chunk[index..<(index + count)])
                index += count
                if count == remaining {
                    let block = pendingBlock
                    pendingBlock = []
                    state = .audio(remaining: metaint)
                    if let needed = MetadataBlockLayout.lookaheadNeeded(for: block, metaint: metaint, checkingWholeBlocks: shortBlockCount > 0) {
                        lookahead = block
                        state = .lookingAhead(needed: needed, blockLength: block.count)
                        finishLookahead(onAudio: onAudio, onMetadata: onMetadata)
                    } else {
                        deliver(block, blockLength: block.count, end: MetadataBlockLayout.sentLength(of: block),
                                onAudio: onAudio, onMetadata: onMetadata)
                    }
                } else {
                    state = .metadata(remaining: remaining - count)
                }
            case .lookingAhead(let needed, _):
                let count = min(needed - lookahead.count, chunk.count - index)
                lookahead.append(contentsOf: chunk[index..<(index + count)])
                index += count
                finishLookahead(onAudio: onAudio, onMetadata: onMetadata)
            }
        }
    }

    /// End of the stream: a block whose real end was still being looked for is decided on the
    /// bytes that came (the rest of the interval they needed never will), so the audio after it
    /// is not lost. A block cut off by the end itself is dropped: it was never whole.
    package mutating func finish(onAudio: (UnsafeRawBufferPointer) -> Void, onMetadata: (MetadataBlock) -> Void) {
        // What the decided block gives back may hold the next block and start its look-ahead;
        // each pass holds fewer bytes than the last, so this ends.
        while let metaint, case .lookingAhead(_, let blockLength) = state {
            let collected = lookahead
            lookahead = []
            state = .audio(remaining: metaint)
            let end = MetadataBlockLayout.realEnd(of: collected, blockLength: blockLength, metaint: metaint)
            deliver(collected, blockLength: blockLength, end: end, onAudio: onAudio, onMetadata: onMetadata)
        }
    }

    /// A block that holds fields and padding and then more bytes was shorter than its length
    /// byte said: the server sent audio where the block should have gone on. Only the fields
    /// (and their padding) are metadata; the rest goes back through as the audio it is, and
    /// the next interval counts from the block's real end, so one lie costs one frame, not
    /// the alignment of the rest of the connection. The decision depends on the block's
    /// bytes alone, so it is the same however the stream was split.
    /// Decides once the look-ahead holds what it needs (at once, when the block itself was
    /// enough), so the decision never waits for a byte it does not use.
    private mutating func finishLookahead(onAudio: (UnsafeRawBufferPointer) -> Void, onMetadata: (MetadataBlock) -> Void) {
        guard let metaint, case .lookingAhead(var needed, let blockLength) = state else { return }
        while lookahead.count >= needed {
            // Once the candidates' length bytes are in, the blocks they announce too.
            let target = MetadataBlockLayout.lookaheadTarget(lookahead, blockLength: blockLength, metaint: metaint)
            guard target > needed else { break }
            needed = target
        }
        guard lookahead.count >= needed else {
            state = .lookingAhead(needed: needed, blockLength: blockLength)
            return
        }
        let collected = lookahead
        lookahead = []
        state = .audio(remaining: metaint)
        let end = MetadataBlockLayout.realEnd(of: collected, blockLength: blockLength, metaint: metaint)
        deliver(collected, blockLength: blockLength, end: end, onAudio: onAudio, onMetadata: onMetadata)
    }

    /// `block` may run on past the block (the bytes a look-ahead collected); `end` is where the
    /// metadata really ends.
    private mutating func deliver(
        _ block: [UInt8], blockLength: Int, end length: Int, onAudio: (UnsafeRawBufferPointer) -> Void,
        onMetadata: (MetadataBlock) -> Void
    ) {
        guard length < block.count else {
            onMetadata(MetadataBlock(bytes: block, position: audioPosition))
            return
        }
        if length < blockLength { shortBlockCount += 1 }
        if length > 0 {
            onMetadata(MetadataBlock(bytes: Array(block[..<length]), position: audioPosition))
        }
        // Through the same loop: with a small metaint the returned bytes can hold a length byte.
        // Each pass is shorter than the last (what follows the real end of what was taken), so
        // this ends.
        Array(block[length...]).withUnsafeBytes { consume($0, onAudio: onAudio, onMetadata: onMetadata) }
    }

    package mutating func consume(_ chunk: [UInt8]) -> [Output] {
        var outputs: [Output] = []
        chunk.withUnsafeBytes { raw in
            consume(raw, onAudio: { Self.append($0, to: &outputs) }, onMetadata: { outputs.append(.metadata($0)) })
        }
        return outputs
    }

    package mutating func finish() -> [Output] {
        var outputs: [Output] = []
        finish(onAudio: { Self.append($0, to: &outputs) }, onMetadata: { outputs.append(.metadata($0)) })
        return outputs
    }

    private static func append(_ audio: UnsafeRawBufferPointer, to outputs: inout [Output]) {
        if case .audio(let previous) = outputs.last {
            outputs[outputs.count - 1] = .audio(previous + audio)
        } else {
            outputs.append(.audio(Array(audio)))
        }
    }
}

/// How much of a received block really is metadata: `Key='value';` fields, then NUL padding to
/// a 16-byte unit. Servers pad to the next unit; a block whose fields and padding end at a
/// unit boundary with anything but NULs after it was shorter than its length byte said.
enum MetadataBlockLayout {
    /// `block.count` when the block is plausible as sent (fields, then only NULs; or no text at
    /// all); else the length at which the metadata ends, a multiple of 16, possibly 0.
    static func sentLength(of block: [UInt8]) -> Int {
        let textEnd = endOfFields(block)
        var firstNonNUL = textEnd
        while firstNonNUL < block.count && block[firstNonNUL] == 0 { firstNonNUL += 1 }
        guard firstNonNUL < block.count else { return block.count }
        // No fields but text all the same: a server's own format, not audio.
        if textEnd == 0 && block.prefix(while: { $0 != 0 }).allSatisfy(isText) { return block.count }
        // The real end: the first unit boundary at or after the text, if only NULs lead to it
        // (a server that sent whole units, fewer than it said). When the NULs stop before that
        // boundary, the block was cut inside its padding: it ends where the NULs do. Counting
        // it as whole instead would take audio bytes for padding and shift every later length
        // byte by as many: from then on each interval's zero length byte would pass as audio
        // and an audio byte go as the length, a one-byte change inside a frame of the right
        // length, which no frame check can see (the soak found this: tools/soak).
        let boundary = (textEnd + 15) / 16 * 16
        return boundary <= firstNonNUL ? boundary : firstNonNUL
    }

    /// Intervals longer than this are not looked ahead across (a lying `icy-metaint` must not
    /// make the demuxer hold megabytes): such a block ends where its NULs do.
    static let maximumLookahead = 64 * 1024

    /// For a block cut inside its padding (fields, some NULs, then audio: `sentLength` ends it
    /// where the NULs do), how many bytes from the block's start to collect before deciding
    /// where it really ended; nil when there is nothing to decide.
    /// With `checkingWholeBlocks` (a server already caught sending a short block), a block that
    /// looks whole but ends in NULs is checked too: audio that starts with NUL bytes can fill a
    /// cut block up to its length byte exactly.
    static func lookaheadNeeded(for block: [UInt8], metaint: Int, checkingWholeBlocks: Bool = false) -> Int? {
        let textEnd = endOfFields(block)
        guard textEnd > 0, metaint <= maximumLookahead else { return nil }
        let end = sentLength(of: block)
        let looksWhole = end == block.count && textEnd < block.count
        guard (end < block.count && end % 16 != 0) || (checkingWholeBlocks && looksWhole) else { return nil }
        // First the length byte after the latest candidate end; then `lookaheadTarget`.
        return max(block.count, end + metaint + 1)
    }

    /// How many bytes from the block's start `realEnd` needs, given those collected so far
    /// (at least `lookaheadNeeded`): the blocks the candidates' length bytes announce, at most
    /// 4080 bytes more. It depends on the bytes alone, so the demuxer's output does not depend
    /// on how the stream was split.
    static func lookaheadTarget(_ bytes: [UInt8], blockLength: Int, metaint: Int) -> Int {
        let block = Array(bytes[..<blockLength])
        let textEnd = endOfFields(block)
        let end = sentLength(of: block)
        var target = max(blockLength, end + metaint + 1)
        guard bytes.count >= target, textEnd <= end else { return target }
        for candidate in textEnd...end {
            target = max(target, candidate + metaint + 1 + Int(bytes[candidate + metaint]) * 16)
        }
        return target
    }

    /// Where a block cut inside its padding really ended, given the bytes after it (`bytes`
    /// holds the block, `blockLength` bytes, and what followed, `lookaheadNeeded` in all). Audio
    /// may begin with NUL bytes, so any NUL from the end of the fields on may have been the last
    /// byte of the block. The right end puts the next interval's length byte on a 0 or on a block
    /// of fields of the length that byte says; the strongest sign is a block of fields there
    /// (the same server cuts its blocks short too, so only its fields are checked: they must
    /// end in its last 16-byte unit), then the latest end that finds a 0 (audio seldom starts
    /// with a NUL; in digital silence every end finds one, and then nothing but the padding
    /// differs). A wrong end can land inside the next block's text, where `treamTitle='…'`
    /// looks like a field too, but its length byte, a letter, does not fit it. With none,
    /// the end of the NULs. Choosing wrong would shift every later interval (see `sentLength`).
    static func realEnd(of bytes: [UInt8], blockLength: Int, metaint: Int) -> Int {
        let firstNonNUL = sentLength(of: Array(bytes[..<blockLength]))
        let textEnd = endOfFields(Array(bytes[..<blockLength]))
        guard textEnd <= firstNonNUL else { return firstNonNUL }
        let candidates = (textEnd...firstNonNUL).reversed()
        if let followedByFields = candidates.first(where: { blockOfFieldsFollows(bytes, lengthByteAt: $0 + metaint) }) {
            return followedByFields
        }
        if let followedByZero = candidates.first(where: { $0 + metaint < bytes.count && bytes[$0 + metaint] == 0 }) {
            return followedByZero
        }
        return firstNonNUL
    }

    /// Whether a block of fields starts at `index` + 1 whose length byte at `index` fits them:
    /// sent whole (fields, then NULs to its end) or at least with its fields ending in its last unit.
    private static func blockOfFieldsFollows(_ bytes: [UInt8], lengthByteAt index: Int) -> Bool {
        guard index < bytes.count else { return false }
        let length = Int(bytes[index]) * 16
        guard length > 0, index + 1 + length <= bytes.count else { return false }
        let next = Array(bytes[(index + 1)..<(index + 1 + length)])
        let fieldsEnd = endOfFields(next)
        guard fieldsEnd > 0 else { return false }
        return sentLength(of: next) == length || (fieldsEnd + 15) / 16 * 16 == length
    }

    private static let quote = UInt8(ascii: "'")
    private static let semicolon = UInt8(ascii: ";")
    private static let equals = UInt8(ascii: "=")

    /// The index after the last well-formed field, skipping separators between fields; 0 when
    /// the block does not start with one.
    static func endOfFields(_ block: [UInt8]) -> Int {
        var index = 0
        var end = 0
        while true {
            while index < block.count && (block[index] == semicolon || isWhitespace(block[index])) { index += 1 }
            guard let fieldEnd = endOfField(block, from: index) else { return end }
            end = fieldEnd
            index = fieldEnd
        }
    }

    /// `Key='value';` or `Key=value;` starting at `start`: the index after its `;` (or after a
    /// closing quote at the end of the text).
    private static func endOfField(_ block: [UInt8], from start: Int) -> Int? {
        let keyEnd = endOfKey(block, from: start)
        guard keyEnd > start, keyEnd < block.count, block[keyEnd] == equals else { return nil }
        let valueStart = keyEnd + 1
        guard valueStart < block.count, block[valueStart] == quote else {
            var end = valueStart
            while end < block.count && block[end] != semicolon && block[end] != 0 { end += 1 }
            return end < block.count && block[end] == semicolon ? end + 1 : nil
        }
        // Titles hold `'` and `;`: a value ends at `';` followed by another key, a NUL or the
        // end of the block; failing that, at a `';` that ends on a unit boundary (a block
        // whose padding never came).
        // And, when nothing else ends it, at the last `';`: a server always closes its values
        // before the padding, so a value still open at a NUL or at the end of the block was cut
        // right after its fields and audio came where the padding should have (the soak's find).
        // What follows may well look like text: LAME fills unused frame bytes with 0x55, 'U'.
        var onBoundary: Int?
        var lastClose: Int?
        var candidate = valueStart + 1
        while candidate + 1 < block.count {
            if block[candidate] == quote && block[candidate + 1] == semicolon {
                let after = candidate + 2
                if after == block.count || block[after] == 0 { return after }
                let nextKeyEnd = endOfKey(block, from: after)
                if nextKeyEnd > after && nextKeyEnd < block.count && block[nextKeyEnd] == equals { return after }
                if onBoundary == nil && after % 16 == 0 { onBoundary = after }
                lastClose = after
            } else if block[candidate] == 0 {
                // Padding began inside the value: an unterminated value still ends there (the
                // parser takes it as it is).
                if let onBoundary { return onBoundary }
                if let lastClose { return lastClose }
                return candidate
            }
            candidate += 1
        }
        if let onBoundary { return onBoundary }
        if let lastClose { return lastClose }
        return block.count
    }

    private static func endOfKey(_ block: [UInt8], from start: Int) -> Int {
        var end = start
        while end < block.count && isKeyByte(block[end]) { end += 1 }
        return end
    }

    private static func isKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default:
            false
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Printable ASCII, whitespace, or any byte of UTF-8 or a legacy charset; compressed audio
    /// has control bytes within a few bytes.
    private static func isText(_ byte: UInt8) -> Bool {
        (byte >= 0x20 && byte != 0x7F) || isWhitespace(byte)
    }
}
