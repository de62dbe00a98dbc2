import ICYWire

/// Why an fMP4 initialization or media segment cannot be read.
package enum FMP4Error: Error, Sendable, Hashable {
    /// A box whose size is smaller than its header or runs past its parent.
    case malformedBox(type: String)
    /// A box larger than the reader will hold (`FMP4Limits`).
    case boxTooLarge(type: String, size: Int)
    /// Boxes nested deeper than any real init segment nests them.
    case tooDeep
    /// The bytes are not a sequence of boxes with a `moov` among them: not an init segment at
    /// all (an error page, a truncated answer), as opposed to one airtap cannot play.
    case notAnInitSegment
    /// The init segment has no audio track (`soun` handler with an `mp4a` sample entry).
    case noAudioTrack
    /// The `esds` is not AAC (or MP3) with an AudioSpecificConfig airtap can read.
    case unsupportedCodec(objectType: Int)
    case malformedAudioSpecificConfig
    /// A `trun` that declares more samples than its box can hold, or samples past the `mdat`.
    case malformedTrackRun
}

package struct FMP4Limits: Sendable, Hashable {
    /// `moov`, `moof`, `emsg`: read whole, a few KB in practice.
    package var maxMetadataBoxLength: Int
    /// `mdat`: a segment's audio (10 s at 320 kbit/s is 400 KB).
    package var maxMediaDataLength: Int
    package var maxDepth: Int
    package var maxSamplesPerRun: Int

    package init(maxMetadataBoxLength: Int = 1 << 20, maxMediaDataLength: Int = 8 << 20, maxDepth: Int = 12,
                 maxSamplesPerRun: Int = 65536) {
        self.maxMetadataBoxLength = maxMetadataBoxLength
        self.maxMediaDataLength = maxMediaDataLength
        self.maxDepth = maxDepth
        self.maxSamplesPerRun = maxSamplesPerRun
    }
}

/// AAC's AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1), enough to write ADTS headers.
package struct AudioSpecificConfig: Sendable, Hashable {
    /// The object type ADTS can signal (1...4): the core of HE-AAC (SBR/PS signalled explicitly).
    package var objectType: Int
    package var samplingFrequencyIndex: Int
    package var channelConfiguration: Int

    package init?(_ bytes: some Collection<UInt8>) {
        var reader = BitReader(Array(bytes.prefix(16)))
        guard var objectType = reader.read(5) else { return nil }
        if objectType == 31 { guard let extended = reader.read(6) else { return nil }; objectType = 32 + extended }
        guard var frequencyIndex = reader.read(4) else { return nil }
        if frequencyIndex == 15 {
            // An explicit 24-bit rate ADTS cannot carry: take the nearest index.
            guard let rate = reader.read(24) else { return nil }
            frequencyIndex = Self.sampleRates.enumerated().min { abs($0.element - rate) < abs($1.element - rate) }!.offset
        }
        guard let channels = reader.read(4) else { return nil }
        if objectType == 5 || objectType == 29 {  // SBR / PS: the core type follows the extension rate
            guard var extensionIndex = reader.read(4) else { return nil }
            if extensionIndex == 15 { guard reader.read(24) != nil else { return nil }; extensionIndex = 0 }
            guard let core = reader.read(5) else { return nil }
            objectType = core
        }
        guard (1...4).contains(objectType), frequencyIndex < Self.sampleRates.count, channels <= 7 else { return nil }
        self.objectType = objectType
        self.samplingFrequencyIndex = frequencyIndex
        self.channelConfiguration = channels
    }

    package var sampleRate: Int { Self.sampleRates[samplingFrequencyIndex] }

    /// The 7-byte ADTS header (no CRC) for a raw access unit of `payloadLength` bytes.
    package func adtsHeader(payloadLength: Int) -> [UInt8] {
        let length = payloadLength + 7
        return [
            0xFF, 0xF1,
            UInt8((objectType - 1) << 6 | samplingFrequencyIndex << 2 | channelConfiguration >> 2),
            UInt8((channelConfiguration & 3) << 6 | (length >> 11) & 0x03),
            UInt8((length >> 3) & 0xFF),
            UInt8((length & 7) << 5 | 0x1F),
            0xFC,
        ]
    }

    /// ADTS frames are at most 8191 bytes.
    static let maxADTSPayload = 8191 - 7

    static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
}

/// One access unit of an fMP4 media segment, ready for the existing framing path.
struct FMP4Sample: Sendable, Hashable {
    /// Decode time in `FMP4InitSegment.timescale` ticks (`tfdt` plus the durations before it).
    package var decodeTime: UInt64
    package var duration: Int
    /// AAC: one ADTS frame (header written from the AudioSpecificConfig). MPEG audio: the frame.
    package var bytes: [UInt8]
}

/// An `emsg` box (ISO/IEC 23009-1 5.10.3.3): an event, for HLS the ID3 tag of timed metadata.
struct FMP4EventMessage: Sendable, Hashable {
    enum Time: Sendable, Hashable {
        /// Version 1: a presentation time on the box's own timescale.
        case absolute(UInt64)
        /// Version 0: a delta after the segment's earliest presentation time.
        case afterSegmentStart(UInt64)
    }

    package var schemeIDURI: String
    package var value: String
    package var timescale: Int
    package var time: Time
    package var duration: Int
    package var id: Int
    package var messageData: [UInt8]

    /// The schemes that carry an ID3 tag in `messageData` (AOM's and Apple's).
    package var carriesID3: Bool {
        ["https://aomedia.org/emsg/ID3", "https://developer.apple.com/streaming/emsg-id3"].contains(schemeIDURI)
    }

    /// The event's time in seconds, given the segment's earliest presentation time in seconds.
    package func seconds(segmentStart: Double) -> Double {
        guard timescale > 0 else { return segmentStart }
        switch time {
        case .absolute(let ticks): return Double(ticks) / Double(timescale)
        case .afterSegmentStart(let ticks): return segmentStart + Double(ticks) / Double(timescale)
        }
    }

    static func parse(_ payload: ArraySlice<UInt8>) throws(FMP4Error) -> FMP4EventMessage {
        var reader = ByteReader(payload)
        guard let version = reader.uint8(), reader.skip(3) else { throw .malformedBox(type: "emsg") }
        switch version {
        case 0:
            guard let scheme = reader.cString(), let value = reader.cString(), let timescale = reader.uint32(),
                  let delta = reader.uint32(), let duration = reader.uint32(), let id = reader.uint32()
            else { throw .malformedBox(type: "emsg") }
            return FMP4EventMessage(schemeIDURI: scheme, value: value, timescale: Int(timescale), time: .afterSegmentStart(UInt64(delta)),
                                    duration: Int(duration), id: Int(id), messageData: Array(reader.rest))
        case 1:
            guard let timescale = reader.uint32(), let time = reader.uint64(), let duration = reader.uint32(), let id = reader.uint32(),
                  let scheme = reader.cString(), let value = reader.cString()
            else { throw .malformedBox(type: "emsg") }
            return FMP4EventMessage(schemeIDURI: scheme, value: value, timescale: Int(timescale), time: .absolute(time),
                                    duration: Int(duration), id: Int(id), messageData: Array(reader.rest))
        default:
            throw .malformedBox(type: "emsg")
        }
    }
}

enum FMP4Event: Sendable, Hashable {
    case sample(FMP4Sample)
    case eventMessage(FMP4EventMessage)
    /// A fragment's `tfdt`: the decode time of its first sample (ticks of the init's timescale).
    case fragmentStart(baseDecodeTime: UInt64)
}

/// Reads fMP4 media segments (`styp`, `sidx`, `emsg`, `moof` + `mdat`, ...) as they arrive.
///
/// Top-level boxes are read whole once their bytes are in (each bounded by `FMP4Limits`),
/// except boxes airtap does not need, which stream past unbuffered. A `moof`'s sample table
/// (the init's track only) is applied to the `mdat` after it. Errors are thrown at the box that
/// caused them; the reader is not usable after an error.
struct FMP4SegmentReader: Sendable {
    package let initSegment: FMP4InitSegment
    package let limits: FMP4Limits

    private enum State: Sendable {
        case header
        /// Inside a box: buffering it (`read`) or letting it stream past.
        case box(type: String, remaining: Int, read: Bool)
    }

    private var input = ByteAccumulator()
    private var state = State.header
    private var boxStart = 0
    /// The last `moof`'s runs, waiting for their `mdat`.
    private var pendingRuns: [TrackRun] = []
    private var pendingMoofStart = 0
    /// The box being read is an `mdat` of size 0: it ends with the segment.
    private var openEnded = false

    private struct TrackRun: Sendable {
        /// Stream offset of the first sample's first byte (nil: the start of the next mdat's data).
        var dataOffset: Int?
        var decodeTime: UInt64
        var samples: [(size: Int, duration: Int)]
    }

    package init(initSegment: FMP4InitSegment, limits: FMP4Limits = FMP4Limits()) {
        self.initSegment = initSegment
        self.limits = limits
    }

    package mutating func push(_ bytes: some Collection<UInt8>, _ emit: (FMP4Event) -> Void) throws(FMP4Error) {
        input.append(bytes)
        try readBoxes(emit)
    }

    /// The segment ended. An `mdat` of size 0 ("to the end of the file") ends here and is read;
    /// any other unfinished box is reported as truncated.
    package mutating func finish(_ emit: (FMP4Event) -> Void) throws(FMP4Error) {
        switch state {
        case .header:
            guard input.readableCount == 0 else { throw .malformedBox(type: "truncated") }
        case let .box(type, _, read):
            guard openEnded, type == "mdat", read else { throw .malformedBox(type: type) }
            try emitSamples(mdat: input.readable, payloadOffset: input.readOffset, emit)
            input.consume(input.readableCount)
            pendingRuns = []
        }
        state = .header
        openEnded = false
    }

    private mutating func readBoxes(_ emit: (FMP4Event) -> Void) throws(FMP4Error) {
        while true {
            switch state {
            case .header:
                guard input.readableCount >= 8 else { return }
                let start = input.readIndex
                let storage = input.storage
                var size = Int(storage[start]) << 24 | Int(storage[start + 1]) << 16 | Int(storage[start + 2]) << 8 | Int(storage[start + 3])
                let type = String(decoding: storage[start + 4..<start + 8], as: UTF8.self)
                var headerLength = 8
                if size == 1 {
                    guard input.readableCount >= 16 else { return }
                    let large = storage[start + 8..<start + 16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    guard large <= UInt64(Int.max / 2) else { throw .boxTooLarge(type: type, size: Int.max) }
                    size = Int(large)
                    headerLength = 16
                } else if size == 0 {
                    // "To the end of the file": only an mdat may do that; read it as far as bounded.
                    guard type == "mdat" else { throw .malformedBox(type: type) }
                    size = limits.maxMediaDataLength + headerLength
                    openEnded = true
                }
                guard size >= headerLength else { throw .malformedBox(type: type) }
                let wanted = ["moof", "mdat", "emsg"].contains(type)
                let bound = type == "mdat" ? limits.maxMediaDataLength : limits.maxMetadataBoxLength
                if wanted, size > bound + headerLength { throw .boxTooLarge(type: type, size: size) }
                boxStart = input.readOffset
                input.consume(headerLength)
                state = .box(type: type, remaining: size - headerLength, read: wanted)
            case let .box(type, remaining, read):
                if !read {
                    let count = min(remaining, input.readableCount)
                    input.consume(count)
                    if remaining - count > 0 {
                        state = .box(type: type, remaining: remaining - count, read: false)
                        return
                    }
                    state = .header
                    continue
                }
                guard input.readableCount >= remaining else {
                    input.needReadable(remaining)
                    return
                }
                let payloadOffset = input.readOffset
                let payload = input.readable.prefix(remaining)
                try readBox(type: type, payload: payload, payloadOffset: payloadOffset, emit)
                input.consume(remaining)
                state = .header
            }
        }
    }

    private mutating func readBox(type: String, payload: ArraySlice<UInt8>, payloadOffset: Int,
                                  _ emit: (FMP4Event) -> Void) throws(FMP4Error) {
        switch type {
        case "emsg":
            emit(.eventMessage(try FMP4EventMessage.parse(payload)))
        case "moof":
            pendingMoofStart = boxStart
            pendingRuns = try readMovieFragment(payload)
            for run in pendingRuns.prefix(1) { emit(.fragmentStart(baseDecodeTime: run.decodeTime)) }
        case "mdat":
            try emitSamples(mdat: payload, payloadOffset: payloadOffset, emit)
            pendingRuns = []
        default:
            break
        }
    }

    private func readMovieFragment(_ moof: ArraySlice<UInt8>) throws(FMP4Error) -> [TrackRun] {
        var runs: [TrackRun] = []
        for traf in try MP4Box.children(of: moof, depth: 1, limits: limits) where traf.type == "traf" {
            var baseOffset: Int? = nil
            var defaultDuration = initSegment.defaultSampleDuration
            var defaultSize = initSegment.defaultSampleSize
            var decodeTime: UInt64 = 0
            var isOurTrack = false
            for box in try MP4Box.children(of: traf.payload, depth: 2, limits: limits) {
                var reader = ByteReader(box.payload)
                switch box.type {
                case "tfhd":
                    guard reader.skip(1), let flags = reader.uint24(), let trackID = reader.uint32() else { throw .malformedBox(type: "tfhd") }
                    isOurTrack = Int(trackID) == initSegment.trackID
                    if flags & 0x01 != 0 {
                        guard let offset = reader.uint64(), offset <= UInt64(Int.max / 2) else { throw .malformedBox(type: "tfhd") }
                        baseOffset = Int(offset)
                    } else if flags & 0x020000 != 0 {
                        baseOffset = pendingMoofStart
                    }
                    if flags & 0x02 != 0 { guard reader.skip(4) else { throw .malformedBox(type: "tfhd") } }
                    if flags & 0x08 != 0 { guard let value = reader.uint32() else { throw .malformedBox(type: "tfhd") }; defaultDuration = Int(value) }
                    if flags & 0x10 != 0 { guard let value = reader.uint32() else { throw .malformedBox(type: "tfhd") }; defaultSize = Int(value) }
                case "tfdt":
                    guard let version = reader.uint8(), reader.skip(3) else { throw .malformedBox(type: "tfdt") }
                    guard let time = version == 1 ? reader.uint64() : reader.uint32().map(UInt64.init) else { throw .malformedBox(type: "tfdt") }
                    decodeTime = time
                case "trun":
                    guard isOurTrack else { continue }
                    guard reader.skip(1), let flags = reader.uint24(), let count = reader.uint32() else { throw .malformedTrackRun }
                    var dataOffset: Int?
                    if flags & 0x01 != 0 {
                        guard let offset = reader.uint32() else { throw .malformedTrackRun }
                        dataOffset = (baseOffset ?? pendingMoofStart) + Int(Int32(bitPattern: offset))
                    }
                    if flags & 0x04 != 0 { guard reader.skip(4) else { throw .malformedTrackRun } }
                    let fieldsPerSample = [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count
                    guard count <= UInt32(limits.maxSamplesPerRun), Int(count) * fieldsPerSample * 4 <= reader.remaining
                    else { throw .malformedTrackRun }
                    var samples: [(size: Int, duration: Int)] = []
                    samples.reserveCapacity(Int(count))
                    for _ in 0..<count {
                        var duration = defaultDuration
                        var size = defaultSize
                        // The guard above proved these fields are there.
                        if flags & 0x100 != 0 { duration = Int(reader.uint32() ?? 0) }
                        if flags & 0x200 != 0 { size = Int(reader.uint32() ?? 0) }
                        if flags & 0x400 != 0 { _ = reader.skip(4) }
                        if flags & 0x800 != 0 { _ = reader.skip(4) }
                        samples.append((size, duration))
                    }
                    let runDecodeTime = decodeTime &+ UInt64(runs.last.map { $0.samples.reduce(0) { $0 + $1.duration } } ?? 0)
                    runs.append(TrackRun(dataOffset: dataOffset, decodeTime: runDecodeTime, samples: samples))
                default:
                    break
                }
            }
        }
        return runs
    }

    private func emitSamples(mdat: ArraySlice<UInt8>, payloadOffset: Int, _ emit: (FMP4Event) -> Void) throws(FMP4Error) {
        var nextOffset = payloadOffset
        // Samples may not overlap: runs that point at the same bytes would multiply a small
        // segment into any amount of audio. Empty samples carry nothing to decode.
        var readEnd = 0
        for run in pendingRuns {
            var offset = run.dataOffset ?? nextOffset
            var time = run.decodeTime
            for sample in run.samples {
                let start = offset - payloadOffset
                guard start >= readEnd, sample.size >= 0, start <= mdat.count - sample.size else { throw .malformedTrackRun }
                guard sample.size > 0 else {
                    time &+= UInt64(sample.duration)
                    continue
                }
                readEnd = start + sample.size
                let unit = mdat[mdat.startIndex + start..<mdat.startIndex + start + sample.size]
                let bytes: [UInt8]
                switch initSegment.codec {
                case .aac(let config):
                    guard unit.count <= AudioSpecificConfig.maxADTSPayload else { throw .malformedTrackRun }
                    bytes = config.adtsHeader(payloadLength: unit.count) + unit
                case .mpegAudio:
                    bytes = Array(unit)
                }
                emit(.sample(FMP4Sample(decodeTime: time, duration: sample.duration, bytes: bytes)))
                offset += sample.size
                time &+= UInt64(sample.duration)
            }
            nextOffset = offset
        }
    }
}
