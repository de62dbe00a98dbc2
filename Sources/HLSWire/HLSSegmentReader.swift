import ICYWire

/// How an HLS media segment packs its audio.
package enum HLSSegmentFormat: Sendable, Hashable {
    /// Packed audio (RFC 8216 3.4): an ID3 tag, then ADTS or MPEG audio frames.
    case packedAudio
    /// MPEG-TS: audio PES packets and, perhaps, a timed-ID3 stream.
    case transportStream
    /// fMP4/CMAF media segments after this `#EXT-X-MAP` init segment.
    case fragmentedMP4(FMP4InitSegment)
}

extension HLSSegmentFormat {
    /// What a segment is from its first byte when no `#EXT-X-MAP` says fMP4: MPEG-TS packets
    /// start with their sync byte; anything else is packed audio (its ID3 head, or frames). A
    /// segment's name says nothing: ffmpeg writes MPEG-TS into `.aac` names.
    package static func startingWith(_ byte: UInt8) -> HLSSegmentFormat {
        byte == MPEGTSReader.syncByte ? .transportStream : .packedAudio
    }

    /// A continuous body (a file, an HTTP stream) is MPEG-TS when this many 188-byte packets in
    /// a row start with the sync byte: an MPEG audio or ADTS body, even joined mid-frame, has
    /// them there by chance once in 2^40.
    private static let transportStreamPackets = 5

    /// How many bytes of a continuous body `isTransportStream` needs.
    package static let transportStreamProbeLength = (transportStreamPackets - 1) * MPEGTSReader.packetLength + 1

    /// Whether a continuous body starting with `head` (at least `transportStreamProbeLength`
    /// bytes; shorter is never MPEG-TS) is MPEG-TS. Unlike a segment, whose first byte decides,
    /// a body may be any audio joined mid-frame.
    package static func isTransportStream(_ head: [UInt8]) -> Bool {
        guard head.count >= transportStreamProbeLength else { return false }
        return stride(from: 0, to: transportStreamProbeLength, by: MPEGTSReader.packetLength).allSatisfy {
            head[$0] == MPEGTSReader.syncByte
        }
    }

    /// "packed audio", "MPEG-TS" or "fMP4": for probe and `--json`.
    package var name: String {
        switch self {
        case .packedAudio: "packed audio"
        case .transportStream: "MPEG-TS"
        case .fragmentedMP4: "fMP4"
        }
    }
}

/// What a segment reader hands the ingest, in order.
package enum HLSMediaEvent: Sendable, Hashable {
    /// ADTS or MPEG audio frames, as the ICY path's framer reads them.
    case audio(ArraySlice<UInt8>)
    /// Timed metadata whose time has come: it applies from the next audio byte on.
    case timedMetadata(TimedID3)
    /// A part of the segment that cannot be read was dropped (never a frame's worth of garbage).
    case dropped(String)
}

/// One segment's bytes in, elementary audio and timed titles out: the container reader of the
/// HLS transport. A TS timed-ID3 payload or an fMP4 `emsg` waits until the first audio stamped at
/// or after its time, so a title takes effect with the audio it belongs to, not when its segment
/// was fetched; what is still waiting at the segment's end applies from the next segment.
///
/// Incremental: bytes may arrive split anywhere, with the same events (adjacent `.audio` aside).
package struct HLSSegmentReader: Sendable {
    private enum Reader: Sendable {
        /// The first byte says whether it is MPEG-TS (0x47) or packed audio.
        case undecided
        /// Packed audio's ID3 head, until it is whole: its title goes out, its bytes do not.
        case packedHead([UInt8])
        /// Skipping this many more bytes of a head too large or malformed to read.
        case skippingHead(Int)
        case packedAudio
        case transportStream(MPEGTSReader)
        case fragmentedMP4(FMP4SegmentReader, failed: Bool)
        case taken
    }

    private var reader: Reader
    /// Titles waiting for their audio: a time in seconds (nil: at once) and the tag. A time
    /// `afterSegmentStart` is a delta still waiting for the segment's start to be added.
    private var waiting: [(seconds: Double?, afterSegmentStart: Bool, metadata: TimedID3)] = []
    /// fMP4: the segment's earliest decode time in seconds, its first fragment's `tfdt`; nil until
    /// the first `moof` has been read.
    private var segmentStart: Double?
    /// A segment carries a few titles at most; more are a flood and are dropped.
    package static let maxWaitingTitles = 16

    /// MPEG-TS: PES packets the previous segment ended inside, for this one to finish.
    private let continuing: [TSUnfinishedPES]

    /// `continuing`: what the previous segment's `finish` returned, when this segment follows it
    /// with no discontinuity between them.
    package init(format: HLSSegmentFormat?, continuing: [TSUnfinishedPES] = []) {
        self.continuing = continuing
        switch format {
        case nil: reader = .undecided
        case .packedAudio: reader = .packedHead([])
        case .transportStream: reader = .transportStream(MPEGTSReader(continuing: continuing))
        case .fragmentedMP4(let initSegment): reader = .fragmentedMP4(FMP4SegmentReader(initSegment: initSegment), failed: false)
        }
    }

    package mutating func push(_ bytes: ArraySlice<UInt8>, _ emit: (HLSMediaEvent) -> Void) {
        guard !bytes.isEmpty else { return }
        if case .undecided = reader, let first = bytes.first {
            reader = HLSSegmentFormat.startingWith(first) == .transportStream ? .transportStream(MPEGTSReader(continuing: continuing)) : .packedHead([])
        }
        switch reader {
        case .packedAudio:
            emit(.audio(bytes))
        case .packedHead(var head):
            reader = .taken
            head.append(contentsOf: bytes)
            readPackedHead(head, emit)
        case .skippingHead(let remaining):
            reader = remaining > bytes.count ? .skippingHead(remaining - bytes.count) : .packedAudio
            if remaining < bytes.count { emit(.audio(bytes.dropFirst(remaining))) }
        case .transportStream(var ts):
            reader = .taken
            ts.push(bytes) { handle($0, emit) }
            reader = .transportStream(ts)
        case .fragmentedMP4(var fmp4, let failed):
            guard !failed else { return }
            reader = .taken
            let initSegment = fmp4.initSegment
            var failure: FMP4Error?
            do throws(FMP4Error) {
                try fmp4.push(bytes) { handle($0, initSegment: initSegment, emit) }
            } catch {
                failure = error
            }
            reader = .fragmentedMP4(fmp4, failed: failure != nil)
            if let failure { emit(.dropped("the rest of an fMP4 segment: \(failure)")) }
        case .undecided, .taken:
            preconditionFailure("the segment reader pushed into itself")
        }
    }

    /// The segment ended: what is whole goes out; titles still waiting go out last. MPEG-TS
    /// PES packets the segment ended inside are returned for the next segment when
    /// `keepingUnfinished` (else dropped as truncated).
    @discardableResult
    package mutating func finish(keepingUnfinished: Bool = false, _ emit: (HLSMediaEvent) -> Void) -> [TSUnfinishedPES] {
        var unfinished: [TSUnfinishedPES] = []
        if case .transportStream = reader {} else if !continuing.isEmpty {
            emit(.dropped("an MPEG-TS PES packet the previous segment ended inside: this segment is not MPEG-TS"))
        }
        switch reader {
        case .transportStream(var ts):
            reader = .taken
            unfinished = ts.finish(keepingUnfinished: keepingUnfinished) { handle($0, emit) }
            reader = .transportStream(ts)
        case .fragmentedMP4(var fmp4, let failed):
            guard !failed else { break }
            reader = .taken
            let initSegment = fmp4.initSegment
            do throws(FMP4Error) {
                try fmp4.finish { handle($0, initSegment: initSegment, emit) }
            } catch {
                emit(.dropped("the end of an fMP4 segment: \(error)"))
            }
            reader = .fragmentedMP4(fmp4, failed: true)
        case .packedHead(let head) where !head.isEmpty:
            // Shorter than an ID3 header, or a head cut off: no title, and nothing to play.
            reader = .packedAudio
            if head.count < ID3v2Header.headerLength { emit(.audio(head[...])) } else { emit(.dropped("a packed-audio segment's cut-off ID3 tag")) }
        case .undecided, .packedHead, .skippingHead, .packedAudio, .taken:
            break
        }
        for title in waiting { emit(.timedMetadata(title.metadata)) }
        waiting.removeAll()
        return unfinished
    }

    /// Packed audio starts with an ID3 tag (RFC 8216 3.4): its title applies from the segment's
    /// first sample; the tag itself never reaches the framer, so positions count audio only.
    private mutating func readPackedHead(_ head: [UInt8], _ emit: (HLSMediaEvent) -> Void) {
        switch PackedAudioSegmentHead.read(head) {
        case nil:
            reader = .packedHead(head)
        case .success(let parsed):
            reader = .packedAudio
            if parsed.metadata.streamTitle != nil { emit(.timedMetadata(parsed.metadata)) }
            if parsed.audioOffset < head.count { emit(.audio(head[parsed.audioOffset...])) }
        case .failure(.noTag):
            reader = .packedAudio
            emit(.audio(head[...]))
        case .failure(.tagTooLarge(let length)), .failure(.malformedTag(let length)):
            emit(.dropped("a packed-audio segment's ID3 tag of \(length) bytes"))
            reader = length > head.count ? .skippingHead(length - head.count) : .packedAudio
            if length < head.count { emit(.audio(head[length...])) }
        }
    }

    private mutating func wait(_ metadata: TimedID3, until seconds: Double?, afterSegmentStart: Bool = false) {
        guard metadata.streamTitle != nil, waiting.count < Self.maxWaitingTitles else { return }
        waiting.append((seconds, afterSegmentStart, metadata))
    }

    /// Titles whose time is at or before audio stamped `seconds` go out first.
    private mutating func releaseTitles(before seconds: Double?, _ emit: (HLSMediaEvent) -> Void) {
        while let first = waiting.first {
            // Samples follow their moof, so the segment's start is known before any is released;
            // should one come without it, its delta alone says nothing about when it is due.
            if first.afterSegmentStart { return }
            if let due = first.seconds, let seconds, due > seconds { return }
            emit(.timedMetadata(first.metadata))
            waiting.removeFirst()
        }
    }

    private mutating func handle(_ event: TSEvent, _ emit: (HLSMediaEvent) -> Void) {
        switch event {
        case .payload(let payload):
            let seconds = payload.pts.map { Double($0) / 90_000 }
            switch payload.kind {
            case .timedID3:
                if let metadata = TimedID3(tag: payload.bytes) { wait(metadata, until: seconds) }
            case .aacADTS, .mpegAudio:
                releaseTitles(before: seconds, emit)
                emit(.audio(payload.bytes))
            }
        case .droppedPayload(let pid, let reason):
            emit(.dropped("an MPEG-TS packet of stream \(pid): \(reason)"))
        case .skipped:
            break
        }
    }

    private mutating func handle(_ event: FMP4Event, initSegment: FMP4InitSegment, _ emit: (HLSMediaEvent) -> Void) {
        let timescale = Double(max(initSegment.timescale, 1))
        switch event {
        case .fragmentStart(let baseDecodeTime):
            guard segmentStart == nil else { return }
            let start = Double(baseDecodeTime) / timescale
            segmentStart = start
            for index in waiting.indices where waiting[index].afterSegmentStart {
                waiting[index].seconds = start + (waiting[index].seconds ?? 0)
                waiting[index].afterSegmentStart = false
            }
        case .eventMessage(let message):
            guard message.carriesID3, let metadata = TimedID3(tag: message.messageData) else { return }
            if case .afterSegmentStart = message.time, segmentStart == nil {
                // A version-0 delta counts from the segment's earliest time, and CMAF puts the
                // segment's emsg boxes before its first moof: the start is added when that is read.
                wait(metadata, until: message.seconds(segmentStart: 0), afterSegmentStart: true)
            } else {
                wait(metadata, until: message.seconds(segmentStart: segmentStart ?? 0))
            }
        case .sample(let sample):
            releaseTitles(before: Double(sample.decodeTime) / timescale, emit)
            emit(.audio(sample.bytes[...]))
        }
    }
}
