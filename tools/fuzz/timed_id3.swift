// TimedID3 and PackedAudioSegmentHead on any bytes: bounded texts, no traps.
// Input: [bytes...] (an ID3 header is forced on when the first byte is odd)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTimedID3(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.takeByte()
    var bytes = input.rest
    if mode % 2 == 1, bytes.count >= 10 {
        bytes.replaceSubrange(0..<3, with: Array("ID3".utf8))
        bytes[3] = 3 + mode / 2 % 2
        bytes[4] = 0
        let body = bytes.count - 10
        bytes.replaceSubrange(6..<10, with: [UInt8(body >> 21 & 0x7F), UInt8(body >> 14 & 0x7F), UInt8(body >> 7 & 0x7F), UInt8(body & 0x7F)])
    }
    if let metadata = TimedID3(tag: bytes) {
        for text in [metadata.title, metadata.artist].compactMap({ $0 }) {
            require(text.utf8.count <= TimedID3.maxTextBytes * 3, "text of \(text.utf8.count) bytes")
        }
        require(metadata.userTexts.count <= 16, "too many user texts")
        if let timestamp = metadata.transportTimestamp { require(timestamp < 1 << 33, "timestamp over 33 bits") }
    }
    if case .success(let head)? = PackedAudioSegmentHead.read(bytes) {
        require(head.audioOffset <= bytes.count, "audio offset past the segment")
    }
    return 0
}
