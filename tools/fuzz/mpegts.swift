// MPEGTSReader: any bytes, whole and in random splits, give the same events; no payload is
// larger than the PES bound; every skipped byte is a byte that was pushed.
// Input: [PES bound selector][split seed: 2][stream...]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMPEGTS(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let maxPESLength = [512 * 1024, 200, 1000, 4000][Int(input.takeByte() % 4)]
    let seed = UInt64(input.takeUInt16())
    let stream = input.rest

    func run(_ chunks: [ArraySlice<UInt8>]) -> (events: [TSEvent], skipped: Int) {
        var reader = MPEGTSReader(maxPESLength: maxPESLength)
        var events: [TSEvent] = []
        var skipped = 0
        let collect: (TSEvent) -> Void = { event in
            if case .skipped(let count) = event { skipped += count } else { events.append(event) }
        }
        for chunk in chunks { reader.push(chunk, collect) }
        reader.finish(collect)
        return (events, skipped)
    }

    let whole = run([stream[...]])
    var splitter = Splitter(seed: seed)
    let split = run(splitter.chunks(stream))
    require(whole.events == split.events, "events depend on the split")
    require(whole.skipped == split.skipped, "skipped bytes depend on the split: \(whole.skipped) vs \(split.skipped)")
    require(whole.skipped <= stream.count, "skipped more than was pushed")
    for case .payload(let payload) in whole.events {
        require(payload.bytes.count <= maxPESLength, "a payload over the bound")
    }
    return 0
}
