// In-stream ID3v2 tags through the real reading path: ID3InflationCheck, then libid3tag
// (id3_tag_parse, which inflates compressed frames), then the text cut.
// Input: [mode][bytes...]. Even mode: the bytes are one whole tag, as the framer hands it on.
// Odd mode: the bytes are an audio stream; the AudioFramer lifts the tags out (as the ingest
// pipeline does) and each is read.
// Invariants: no crash, every text within ID3Reader.maxTextBytes, and no allocation or RSS
// over the limits tools/fuzz/run sets (-malloc_limit_mb, -rss_limit_mb): a zlib bomb that got
// past the check would trip them.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzID3(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.takeByte()
    let bytes = input.rest
    if mode & 1 == 0 {
        readTag(bytes)
    } else {
        var framer = AudioFramer()
        for event in framer.push(bytes) + framer.finish() {
            if case .id3Tag(let tag) = event { readTag(Array(tag.bytes)) }
        }
    }
    return 0
}

private func readTag(_ tag: [UInt8]) {
    let read = tag.withUnsafeBytes { raw in
        Result { () throws(ID3TagError) in try ID3Reader.readTextFrames(in: raw) }
    }
    guard case .success(let frames?) = read else { return }
    for frame in frames.frames {
        require(frame.text.utf8.count <= ID3Reader.maxTextBytes, "\(frame.id) text of \(frame.text.utf8.count) bytes")
    }
}
