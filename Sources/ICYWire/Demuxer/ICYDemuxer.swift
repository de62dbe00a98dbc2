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
        /// A block whose bytes raise the question whether it ended early was received; the bytes
        /// after it are being collected until the next interval's length byte is in sight, so that
        /// what follows its declared end answers it (see `MetadataBlockLayout.realEnd`).
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
    /// The last audio bytes of the current interval (at most `AudioContinuity.tailLength`): where
    /// the frames before a block say the next one starts.
    private var audioTail: [UInt8] = []

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
                keepTail(of: chunk[index..<(index + count)], remaining: remaining, metaint: metaint)
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
                        deliver(block, blockLength: block.count, end: block.count, onAudio: onAudio, onMetadata: onMetadata)
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
            let end = MetadataBlockLayout.realEnd(of: collected, blockLength: blockLength, metaint: metaint, audioBefore: audioTail)
            deliver(collected, blockLength: blockLength, end: end, onAudio: onAudio, onMetadata: onMetadata)
        }
    }

    /// Keeps the last `AudioContinuity.tailLength` bytes of the interval: `audio` is its part that
    /// starts `remaining` bytes before the interval's end. Copies nothing until the tail is near.
    private mutating func keepTail(of audio: UnsafeRawBufferPointer.SubSequence, remaining: Int, metaint: Int) {
        guard metaint <= MetadataBlockLayout.maximumLookahead else { return }
        if remaining == metaint { audioTail.removeAll(keepingCapacity: true) }
        let tailStart = remaining - AudioContinuity.tailLength
        guard tailStart < audio.count else { return }
        if audioTail.capacity == 0 { audioTail.reserveCapacity(min(metaint, AudioContinuity.tailLength)) }
        audioTail.append(contentsOf: audio.dropFirst(max(0, tailStart)))
    }

    /// A block that was shorter than its length byte said: the server sent audio where the block
    /// should have gone on. Only the block's real bytes are metadata; the rest goes back through
    /// as the audio it is, and the next interval counts from the block's real end, so one lie
    /// costs no audio and not the alignment of the rest of the connection. What follows the block's
    /// declared end decides, never the block's own bytes (a title may hold anything); the
    /// decision depends on the stream's bytes alone, so it is the same however it was split.
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
        let end = MetadataBlockLayout.realEnd(of: collected, blockLength: blockLength, metaint: metaint, audioBefore: audioTail)
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

/// Where a received block really ends. A server sends `Key='value';` fields, then NUL padding to
/// a 16-byte unit, and says how long in its length byte. Some lie: they send fewer bytes and
/// then audio. The block's own bytes can only raise the question (its fields end and something
/// other than NULs follows), never answer it: a title may hold NULs, control bytes, `';` or
/// anything else. What follows the declared end answers it: the audio going on where its frames
/// say, or the next length byte where one is due.
enum MetadataBlockLayout {
    /// `block.count` when the block's bytes raise no question (fields, then only NULs; or no
    /// text at all); else where the fields and the NULs after them would end it, a candidate for
    /// `realEnd`: the first unit boundary after the fields if only NULs lead to it, else where
    /// the NULs stop.
    static func sentLength(of block: [UInt8]) -> Int {
        let textEnd = endOfFields(block)
        var firstNonNUL = textEnd
        while firstNonNUL < block.count && block[firstNonNUL] == 0 { firstNonNUL += 1 }
        guard firstNonNUL < block.count else { return block.count }
        // No fields but text all the same: a server's own format, not audio.
        if textEnd == 0 && block.prefix(while: { $0 != 0 }).allSatisfy(isText) { return block.count }
        let boundary = (textEnd + 15) / 16 * 16
        return boundary <= firstNonNUL ? boundary : firstNonNUL
    }

    /// Intervals longer than this are not looked ahead across (a lying `icy-metaint` must not
    /// make the demuxer hold megabytes): such a block is taken as its length byte says.
    static let maximumLookahead = 64 * 1024

    /// For a block whose bytes raise the question (see `sentLength`), how many bytes from the
    /// block's start to collect before deciding where it ended: up to the length byte after its
    /// declared end; nil when there is nothing to decide.
    /// With `checkingWholeBlocks` (a server already caught sending a short block), a block that
    /// looks whole but ends in NULs is checked too: audio that starts with NUL bytes can fill a
    /// cut block up to its length byte exactly.
    static func lookaheadNeeded(for block: [UInt8], metaint: Int, checkingWholeBlocks: Bool = false) -> Int? {
        guard metaint <= maximumLookahead else { return nil }
        let textEnd = endOfFields(block)
        let sent = sentLength(of: block)
        let looksWhole = sent == block.count && textEnd > 0 && textEnd < block.count
        guard sent < block.count || (checkingWholeBlocks && looksWhole) else { return nil }
        return block.count + metaint + 1
    }

    /// How many bytes from the block's start `realEnd` needs, given those collected so far
    /// (at least `lookaheadNeeded`): the blocks the length bytes after the declared end and
    /// after every candidate end announce, at most 4080 bytes more. It depends on the bytes
    /// alone, so the demuxer's output does not depend on how the stream was split.
    static func lookaheadTarget(_ bytes: [UInt8], blockLength: Int, metaint: Int) -> Int {
        var target = blockLength + metaint + 1
        guard bytes.count >= target else { return target }
        for end in candidateEnds(Array(bytes[..<blockLength])) + [blockLength] {
            target = max(target, end + metaint + 1 + Int(bytes[end + metaint]) * 16)
        }
        return target
    }

    /// The ends a block whose bytes raise the question may really have had, latest first: from
    /// the end of its fields to the end of the NULs after them (audio may begin with NUL bytes,
    /// so any of them may have been the last byte of the block; a block that looks whole may be
    /// all of them). Never the declared end.
    static func candidateEnds(_ block: [UInt8]) -> [Int] {
        let textEnd = endOfFields(block)
        let end = min(sentLength(of: block), block.count - 1)
        guard textEnd <= end else { return [] }
        return Array((textEnd...end).reversed())
    }

    /// Where a block ended (`bytes` holds the block, `blockLength` bytes, and what followed,
    /// `lookaheadTarget` in all, or fewer at the end of the stream; `audioBefore` is the audio
    /// right before it). Its declared end stands unless what follows it says otherwise:
    /// - the audio's frames (or Ogg pages) before the block say where the next one starts; the
    ///   end that puts a header of the same stream there is the real one. The declared end that
    ///   does stands; when it does not and a candidate does, the candidate is the end.
    /// - else the next length byte where one is due: a block of fields of the length it says
    ///   (the strongest sign), or a 0 ("no change"), or the start of a block. A candidate wins
    ///   over the declared end only with a stronger sign than the declared end has.
    /// A wrong end would shift every later interval: each interval's zero length byte would pass
    /// as audio and an audio byte go as the length, a one-byte change inside a frame of the right
    /// length that no frame check sees.
    static func realEnd(of bytes: [UInt8], blockLength: Int, metaint: Int, audioBefore tail: [UInt8]) -> Int {
        let candidates = candidateEnds(Array(bytes[..<blockLength]))
        guard !candidates.isEmpty else { return blockLength }
        let continuity = AudioContinuity(tail: tail)
        func audioGoesOn(after end: Int) -> Bool? {
            continuity?.continues(after: end, in: bytes, limit: min(bytes.count, end + metaint), tail: tail)
        }
        func nextLengthByte(after end: Int) -> NextLengthByte {
            NextLengthByte(bytes, at: end + metaint)
        }
        switch audioGoesOn(after: blockLength) {
        case true?:
            return blockLength
        case false?:
            let goingOn = candidates.filter { audioGoesOn(after: $0) == true }
            // Latest first; a stronger length byte after it first of all.
            if let best = goingOn.max(by: { nextLengthByte(after: $0).strength < nextLengthByte(after: $1).strength }) {
                return best
            }
        case nil:
            break
        }
        let declared = nextLengthByte(after: blockLength).strength
        let stronger = candidates.filter { nextLengthByte(after: $0).strength > declared }
        // Latest first; the strongest sign first of all.
        return stronger.max(by: { nextLengthByte(after: $0).strength < nextLengthByte(after: $1).strength }) ?? blockLength
    }

    /// What is found where the next length byte is due.
    enum NextLengthByte {
        case blockOfFields
        case zero
        case blockStart
        case nothingPlausible

        /// How strong a sign of a real block end this is: a block of fields is hardly chance; a 0
        /// can be audio (digital silence is NULs), and so can a field's start inside a block's text.
        var strength: Int {
            switch self {
            case .blockOfFields: 2
            case .zero, .blockStart: 1
            case .nothingPlausible: 0
            }
        }

        /// The length byte at `index` of `bytes`: a block of fields if the block it announces
        /// starts with a field and its fields end in its last unit (sent whole or cut in its
        /// padding), the start of a block if it only starts with one.
        init(_ bytes: [UInt8], at index: Int) {
            guard index < bytes.count else { self = .nothingPlausible; return }
            let length = Int(bytes[index]) * 16
            guard length > 0 else { self = .zero; return }
            let start = index + 1
            let keyEnd = MetadataBlockLayout.endOfKey(bytes, from: start)
            guard keyEnd > start, keyEnd < bytes.count, bytes[keyEnd] == MetadataBlockLayout.equals else {
                self = .nothingPlausible
                return
            }
            guard start + length <= bytes.count else { self = .blockStart; return }
            let next = Array(bytes[start..<(start + length)])
            let fieldsEnd = MetadataBlockLayout.endOfFields(next)
            let fits = fieldsEnd > 0 && (MetadataBlockLayout.sentLength(of: next) == length || (fieldsEnd + 15) / 16 * 16 == length)
            self = fits ? .blockOfFields : .blockStart
        }
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
        // A title may hold NULs and `';` too: these ends only raise the question whether the
        // block was cut; what follows the block answers it (`realEnd`).
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
