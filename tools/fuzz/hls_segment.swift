// HLSSegmentReader: any segment bytes, whole and in random splits, give the same events (adjacent
// `.audio` joined); the audio never holds more bytes than were pushed (fMP4 AAC: besides the
// 7-byte ADTS header written per sample); at most maxWaitingTitles titles go out between two
// audio events, the waiting list's bound.
// Input: [mode][split seed: 2][segment...]. Mode bits 0-1: nil (sniffed), packed audio, MPEG-TS,
// fMP4; for fMP4, bit 2 MP3 samples instead of AAC, bits 3-5 the trex default sample size / 10.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHLSSegment(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let mode = input.takeByte()
    let seed = UInt64(input.takeUInt16())
    let segment = input.rest

    let aac = AudioSpecificConfig([0x12, 0x10])!
    let isMP3 = mode & 0x04 != 0
    let initSegment = FMP4InitSegment(trackID: 1, timescale: 44100, codec: isMP3 ? .mpegAudio : .aac(aac),
                                      defaultSampleDuration: 1024, defaultSampleSize: Int((mode >> 3) & 0x07) * 10)
    let format: HLSSegmentFormat? = switch mode & 0x03 {
    case 0: nil
    case 1: .packedAudio
    case 2: .transportStream
    default: .fragmentedMP4(initSegment)
    }

    struct Run {
        /// Adjacent `.audio` joined.
        var events: [HLSMediaEvent] = []
        var audioEvents = 0
        var audioBytes = 0
        var titlesSinceAudio = 0
        var mostTitlesBetweenAudio = 0
    }

    func run(_ chunks: [ArraySlice<UInt8>]) -> Run {
        var reader = HLSSegmentReader(format: format)
        var run = Run()
        let collect: (HLSMediaEvent) -> Void = { event in
            switch event {
            case .audio(let bytes):
                run.audioEvents += 1
                run.audioBytes += bytes.count
                run.titlesSinceAudio = 0
                if case .audio(let previous)? = run.events.last {
                    run.events[run.events.count - 1] = .audio((Array(previous) + bytes)[...])
                } else {
                    run.events.append(.audio(Array(bytes)[...]))
                }
            case .timedMetadata:
                run.titlesSinceAudio += 1
                run.mostTitlesBetweenAudio = max(run.mostTitlesBetweenAudio, run.titlesSinceAudio)
                run.events.append(event)
            case .dropped:
                run.events.append(event)
            }
        }
        for chunk in chunks { reader.push(chunk, collect) }
        reader.finish(collect)
        return run
    }

    let whole = run([segment[...]])
    var splitter = Splitter(seed: seed)
    let split = run(splitter.chunks(segment))
    require(whole.events == split.events, "events depend on the split")
    for result in [whole, split] {
        let headers: Int
        if case .fragmentedMP4 = format, !isMP3 { headers = 7 * result.audioEvents } else { headers = 0 }
        require(result.audioBytes - headers <= segment.count,
                "\(result.audioBytes) bytes of audio (\(headers) of them ADTS headers) from \(segment.count) pushed")
        require(result.mostTitlesBetweenAudio <= HLSSegmentReader.maxWaitingTitles,
                "\(result.mostTitlesBetweenAudio) titles in a row: more than can wait")
    }
    return 0
}
