// ID3v2Header and the frame headers (MP3FrameHeader, ADTSHeader, AudioFrameHeader.probe,
// XingFrame): the collection and pointer readers agree, and `probe` says "need more bytes"
// only for a prefix that could still become a header.
// Input: [offset][bytes...]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeaders(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let offset = Int(input.takeByte() % 16)
    let bytes = input.rest

    bytes.withUnsafeBytes { raw in
        // ID3v2
        let tail = bytes.count >= offset ? Array(bytes[offset...]) : []
        let fromCollection = ID3v2Header(tail)
        let fromPointer = ID3v2Header(raw, at: offset)
        require(fromCollection == fromPointer, "ID3v2Header readers disagree")
        if let header = fromCollection {
            require(tail.starts(with: Array("ID3".utf8)), "tag without ID3")
            require((2...4).contains(header.majorVersion), "version")
            require(header.tagSize >= 0 && header.tagSize < 1 << 28, "syncsafe size \(header.tagSize)")
            require(header.totalLength >= ID3v2Header.headerLength + header.tagSize, "totalLength")
        }
        require(ID3v2Header(raw, at: -1) == nil && ID3v2Header(raw, at: bytes.count + 3) == nil, "out of range offset")

        // Frame headers
        let probe = AudioFrameHeader.probe(raw, at: offset)
        if case .found(let header) = probe {
            require(header.frameLength > 0, "frameLength \(header.frameLength)")
            require(header.sampleRate > 0 && header.samplesPerFrame > 0, "rates")
            require(header.duration > 0 && header.duration < 1, "duration")
            require(header.isCompatible(with: header), "compatible with itself")
            _ = header.bitrate
            _ = header.codec.fileExtension
            switch header {
            case .mpeg(let mpeg):
                require(MP3FrameHeader(tail) == mpeg, "MP3FrameHeader readers disagree")
                require(mpeg.frameLength >= 4 + (mpeg.hasCRC ? 2 : 0) || mpeg.layer != .layer3, "frame shorter than its header")
                if let xing = XingFrame(matching: tail) {
                    let rendered = xing.render(frameCount: 10, byteCount: 10 * mpeg.frameLength, isConstantBitrate: false)
                    require(rendered.count == xing.length, "Xing frame length")
                }
            case .adts(let adts):
                require(ADTSHeader(tail) == adts, "ADTSHeader readers disagree")
                require(adts.frameLength >= adts.headerLength, "ADTS frame shorter than its header")
            case .oggPage:
                // Ogg pages come from OggPacketizer, never from the frame-header probe.
                require(false, "the MPEG/ADTS probe returned an Ogg page header")
            }
        }
        require((AudioFrameHeader(at: raw, offset: offset) != nil) == { if case .found = probe { true } else { false } }(), "init? and probe disagree")
        // Monotonic: a prefix is rejected only if the whole is.
        for length in 0..<min(tail.count, 9) {
            let prefixProbe = Array(tail.prefix(length)).withUnsafeBytes { AudioFrameHeader.probe($0, at: 0) }
            switch (prefixProbe, probe) {
            case (.invalid, .found): require(false, "prefix of \(length) bytes rejected, whole accepted")
            case (.found(let a), .found(let b)): require(a == b, "prefix finds another header")
            case (.found, _): require(false, "prefix found, whole not")
            default: break
            }
        }
    }
    return 0
}
