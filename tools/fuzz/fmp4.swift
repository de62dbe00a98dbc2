// FMP4InitSegment.parse on any bytes; FMP4SegmentReader on any bytes, whole and in random
// splits, gives the same events and the same error.
// Input: [mode][split seed: 2][bytes...]: mode even reads the bytes as an init segment too.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFMP4(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.takeByte()
    let seed = UInt64(input.takeUInt16())
    let bytes = input.rest
    let limits = FMP4Limits(maxMetadataBoxLength: 4096, maxMediaDataLength: 8192)

    if mode % 2 == 0 {
        if let parsed = try? FMP4InitSegment.parse(bytes, limits: limits) {
            require(parsed.timescale > 0, "timescale 0")
        }
    }
    let aac = AudioSpecificConfig([0x12, 0x10])!
    let initSegment = FMP4InitSegment(trackID: Int(mode >> 4), timescale: 44100, codec: mode & 0x08 != 0 ? .mpegAudio : .aac(aac),
                                      defaultSampleDuration: 1024, defaultSampleSize: Int(mode & 0x07) * 10)

    func run(_ chunks: [ArraySlice<UInt8>]) -> (events: [FMP4Event], error: FMP4Error?) {
        var reader = FMP4SegmentReader(initSegment: initSegment, limits: limits)
        var events: [FMP4Event] = []
        do {
            for chunk in chunks { try reader.push(chunk) { events.append($0) } }
            try reader.finish { events.append($0) }
        } catch {
            return (events, error)
        }
        return (events, nil)
    }

    let whole = run([bytes[...]])
    var splitter = Splitter(seed: seed)
    let split = run(splitter.chunks(bytes))
    require(whole.events == split.events, "events depend on the split")
    require(whole.error == split.error, "error depends on the split: \(String(describing: whole.error)) vs \(String(describing: split.error))")
    for case .sample(let sample) in whole.events {
        require(sample.bytes.count <= 8191, "a sample larger than an ADTS frame")
        if case .aac = initSegment.codec { require(ADTSHeader(sample.bytes)?.frameLength == sample.bytes.count, "bad ADTS header") }
    }
    return 0
}
