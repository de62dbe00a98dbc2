// ICYDemuxer: any bytes, any metaint, cut anywhere.
// Input: [metaint selector][split seed: 2 bytes][stream...]
// Checks against a plain reference demuxer written here: same audio, same blocks at the same
// positions, and audio + metadata + length bytes = the input (the unfinished block aside).
// Where a block is shorter than its length byte (MetadataBlockLayout: what follows its declared
// end says so), the reference rewinds to the block's real end; the demuxer re-feeds the rest:
// the two must agree for every split. After the first short block, blocks that look whole are
// looked ahead across too.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDemuxer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.takeByte()
    // 0: no metadata; 255: a negative metaint (treated as none); else 1...254 with some big ones.
    let metaint: Int? = switch selector {
    case 0: nil
    case 255: -16
    case 250...254: Int(selector) * 64
    default: Int(selector)
    }
    let seed = UInt64(input.takeUInt16())
    let stream = input.rest

    // Reference: one pass over the whole stream.
    var refAudio: [UInt8] = []
    var refBlocks: [MetadataBlock] = []
    var lengthBytes = 0
    var pendingMetadata = 0
    // Once a block was short, the demuxer checks every later block that looks whole too.
    var shortBlocks = 0
    if let metaint, metaint > 0 {
        var i = 0
        while i < stream.count {
            let audioEnd = min(stream.count, i + metaint)
            refAudio += stream[i..<audioEnd]
            // The audio right before the coming block, as the demuxer keeps it.
            let audioBefore = metaint <= MetadataBlockLayout.maximumLookahead
                ? Array(stream[i..<audioEnd].suffix(AudioContinuity.tailLength)) : []
            i = audioEnd
            guard i < stream.count else { break }
            let length = Int(stream[i]) * 16
            lengthBytes += 1
            i += 1
            if length == 0 { continue }
            if i + length <= stream.count {
                // A block shorter than its length byte (what follows it says so) ends early;
                // the next interval starts there (re-reading the rest as audio).
                let block = Array(stream[i..<(i + length)])
                var sent = length
                if let needed = MetadataBlockLayout.lookaheadNeeded(for: block, metaint: metaint, checkingWholeBlocks: shortBlocks > 0) {
                    // Its bytes raise the question: the demuxer looks ahead to the next length byte.
                    var target = needed
                    if i + needed <= stream.count {
                        target = MetadataBlockLayout.lookaheadTarget(Array(stream[i..<(i + needed)]), blockLength: length, metaint: metaint)
                    }
                    guard i + target <= stream.count else {
                        pendingMetadata = stream.count - i
                        i = stream.count
                        break
                    }
                    sent = MetadataBlockLayout.realEnd(of: Array(stream[i..<(i + target)]), blockLength: length, metaint: metaint,
                                                       audioBefore: audioBefore)
                }
                if sent < length { shortBlocks += 1 }
                if sent > 0 {
                    refBlocks.append(MetadataBlock(bytes: Array(block[..<sent]), position: refAudio.count))
                }
                i += sent
            } else {
                pendingMetadata = stream.count - i
                i = stream.count
            }
        }
    } else {
        refAudio = stream
    }
    let metadataBytes = refBlocks.reduce(0) { $0 + $1.bytes.count }
    require(refAudio.count + metadataBytes + pendingMetadata + lengthBytes == stream.count, "reference accounting")

    // The demuxer, fed in random chunks.
    var demuxer = ICYDemuxer(metaint: metaint)
    var audio: [UInt8] = []
    var blocks: [MetadataBlock] = []
    var splitter = Splitter(seed: seed)
    for chunk in splitter.chunks(stream) {
        Array(chunk).withUnsafeBytes { raw in
            demuxer.consume(raw, onAudio: { piece in
                require(!piece.isEmpty, "empty audio callback")
                audio += piece
            }, onMetadata: { block in
                // Whole units, except a block cut inside its padding: it ends where its NULs do.
                require(!block.bytes.isEmpty && block.bytes.count <= 255 * 16, "block length \(block.bytes.count)")
                require(block.position == audio.count, "block position \(block.position) != audio so far \(audio.count)")
                blocks.append(block)
            })
        }
        require(demuxer.audioPosition == audio.count, "audioPosition \(demuxer.audioPosition) != \(audio.count)")
    }
    require(audio == refAudio, "audio differs from the reference (\(audio.count) vs \(refAudio.count) bytes)")
    require(blocks == refBlocks, "blocks differ from the reference (\(blocks.count) vs \(refBlocks.count))")

    // The whole-chunk convenience API agrees too.
    var whole = ICYDemuxer(metaint: metaint)
    var wholeAudio: [UInt8] = []
    var wholeBlocks: [MetadataBlock] = []
    for output in whole.consume(stream) {
        switch output {
        case .audio(let bytes): wholeAudio += bytes
        case .metadata(let block): wholeBlocks.append(block)
        }
    }
    require(wholeAudio == refAudio && wholeBlocks == refBlocks, "array API differs")

    // Blocks go on to the metadata parser, as in the ingest pipeline.
    for block in blocks {
        _ = TrackInfo(StreamMetadata.parse(block.bytes))
    }
    return 0
}
