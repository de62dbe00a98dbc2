import HLSWire
import ICYWire
import ID3Tagging
import Logging

/// Bytes off the wire in, ordered stream events out: ICY demuxer, then the container's reader,
/// then titles.
///
/// Every title, whatever carried it (an ICY block, an ID3 tag, a link's comments), waits in
/// `pending` until the reader has emitted every packet that starts before it, so a sink can cut
/// exactly where the event falls in the sequence.
/// Loop-confined: one pipeline per connection, used only on the ingest thread.
package final class IngestPipeline {
    /// Whether the connection still streams or is winding down.
    private enum Stage {
        case streaming
        /// The body ended: a cut-off last frame is expected now, not news.
        case ending
    }

    /// What wraps a body's audio before the container's reader sees it.
    private enum Carriage {
        /// The body's first bytes, until there are enough to tell MPEG-TS by its packets.
        case undecided([UInt8])
        /// Frames or Ogg pages as they come.
        case direct
        /// MPEG-TS (a saved HLS segment, a `.ts` file, a station that sends it whatever its
        /// content type or name says): its PES audio goes to the reader, its timed ID3 titles
        /// are announced.
        case transportStream(HLSSegmentReader)
        /// Only while the TS reader is taken out to push into it.
        case taken
    }

    private var demuxer: ICYDemuxer
    private var carriage: Carriage
    private var reader: ContainerReader
    private var stage = Stage.streaming
    /// A codec airtap cannot read (an Ogg link of another codec): the session ends with it, not retried.
    private(set) var unsupportedFormat: UnsupportedFormat?
    private var pending: [TrackChange] = []
    static let maxPendingTitles = 64
    private(set) var lastRawTitle: String?
    private var format: AudioFrameHeader?
    private let titleDecoding: TitleDecoding
    private let logger: Logger

    private(set) var packetCount = 0
    /// Audio bytes handed to the reader so far: the stream position the next byte will have.
    private var routedByteCount = 0
    private(set) var audioByteCount = 0
    /// A source's own LAME/Xing/VBRI frames dropped (see `EncoderInfoFrame`).
    private(set) var droppedInfoFrames = 0

    /// `lastRawTitle`: the title the previous connection ended with, so a reconnect that
    /// announces it again is no change.
    init(metaint: Int?, titleDecoding: TitleDecoding, logger: Logger, lastRawTitle: String? = nil,
         container: Container = .audioFrames) {
        self.demuxer = ICYDemuxer(metaint: metaint)
        self.carriage = container == .ogg ? .direct : .undecided([])
        self.reader = ContainerReader(container)
        self.lastRawTitle = lastRawTitle
        self.titleDecoding = titleDecoding
        self.logger = logger
    }

    package convenience init(metaint: Int?, charset: TextCharset, logger: Logger, lastRawTitle: String? = nil,
                             container: Container = .audioFrames) {
        self.init(metaint: metaint, titleDecoding: TitleDecoding(fallback: charset), logger: logger, lastRawTitle: lastRawTitle,
                  container: container)
    }

    package func consume(_ bytes: UnsafeRawBufferPointer, emit: (StreamEvent) -> Void) {
        let cutFramesBefore = reader.cutFrameCount
        let shortBlocksBefore = demuxer.shortBlockCount
        demuxer.consume(bytes, onAudio: { unwrap($0, emit: emit) }, onMetadata: { receive($0) })
        logShortBlocks(since: shortBlocksBefore)
        logCutFrames(since: cutFramesBefore)
    }

    /// What a segment reader hands on (an HLS segment's, or that of a body that is MPEG-TS):
    /// its audio straight to the reader, its timed titles from the next audio byte on.
    package func consume(_ event: HLSMediaEvent, emit: (StreamEvent) -> Void) {
        let cutFramesBefore = reader.cutFrameCount
        take(event, emit: emit)
        logCutFrames(since: cutFramesBefore)
    }

    private func take(_ event: HLSMediaEvent, emit: (StreamEvent) -> Void) {
        switch event {
        case .audio(let audio):
            audio.withUnsafeBytes { route($0, emit: emit) }
        case .timedMetadata(let metadata):
            guard let title = metadata.streamTitle else { return }
            announce(TrackInfo(streamTitle: title), source: .timedMetadata)
        case .dropped(let what):
            logger.warning("dropped \(what)")
        }
    }

    /// A body's audio, out of MPEG-TS first when it is that.
    private func unwrap(_ audio: UnsafeRawBufferPointer, emit: (StreamEvent) -> Void) {
        switch carriage {
        case .direct:
            route(audio, emit: emit)
        case .undecided(var head):
            carriage = .taken
            head.append(contentsOf: audio)
            guard head.count >= HLSSegmentFormat.transportStreamProbeLength else {
                carriage = .undecided(head)
                return
            }
            decideCarriage(head, emit: emit)
        case .transportStream(var stream):
            carriage = .taken
            stream.push(Array(audio)[...]) { take($0, emit: emit) }
            carriage = .transportStream(stream)
        case .taken:
            preconditionFailure("the pipeline unwrapped into itself")
        }
    }

    private func decideCarriage(_ head: [UInt8], emit: (StreamEvent) -> Void) {
        guard HLSSegmentFormat.isTransportStream(head) else {
            carriage = .direct
            head.withUnsafeBytes { route($0, emit: emit) }
            return
        }
        logger.info("the stream is MPEG-TS: reading the audio inside it")
        var stream = HLSSegmentReader(format: .transportStream)
        stream.push(head[...]) { take($0, emit: emit) }
        carriage = .transportStream(stream)
    }

    /// A title that applies from the next audio byte on (a transport's timed metadata).
    package func announce(_ info: TrackInfo, source: TrackChange.Source) {
        enqueue(TrackChange(info: info, position: routedByteCount, source: source))
    }

    /// Audio out of the demuxer, to the container's reader.
    private func route(_ audio: UnsafeRawBufferPointer, emit: (StreamEvent) -> Void) {
        routedByteCount += audio.count
        reader.push(audio) { handle($0, emit: emit) }
    }

    private func logShortBlocks(since before: Int) {
        guard demuxer.shortBlockCount > before else { return }
        logger.warning("a metadata block was shorter than its length byte said: realigned on its real end",
                       metadata: ["short blocks so far": "\(demuxer.shortBlockCount)"])
    }

    /// End of the connection: the last whole frame, then any title still waiting.
    package func finish(emit: (StreamEvent) -> Void) {
        let shortBlocksBefore = demuxer.shortBlockCount
        demuxer.finish(onAudio: { unwrap($0, emit: emit) }, onMetadata: { receive($0) })
        logShortBlocks(since: shortBlocksBefore)
        stage = .ending
        // A body too short to tell is not MPEG-TS: the reader decides what it is.
        if case .undecided(let head) = carriage { decideCarriage(head, emit: emit) }
        if case .transportStream(var stream) = carriage {
            carriage = .taken
            stream.finish { take($0, emit: emit) }
            carriage = .transportStream(stream)
        }
        let cutFramesBefore = reader.cutFrameCount
        reader.finish { handle($0, emit: emit) }
        logCutFrames(since: cutFramesBefore)
        for change in pending { emit(.metadata(change)) }
        pending.removeAll()
    }

    /// Joining mid-frame (Icecast's burst starts anywhere) and a cut-off last frame are normal;
    /// garbage between frames is news.
    private var skipsAreExpected: Bool { stage == .ending || packetCount == 0 }

    /// One packet, whatever container it came from: titles that start at or before it go first.
    private func emitPacket(_ packet: Packet, emit: (StreamEvent) -> Void) {
        while let first = pending.first, first.position <= packet.position {
            emit(.metadata(first))
            pending.removeFirst()
        }
        packetCount += 1
        audioByteCount += packet.bytes.count
        emit(.packet(packet))
    }

    private func emitFormat(_ header: AudioFrameHeader, emit: (StreamEvent) -> Void) {
        if let format, format.isCompatible(with: header), format.channels == header.channels { return }
        format = header
        emit(.format(header))
    }

    private func handle(_ event: ContainerEvent, emit: (StreamEvent) -> Void) {
        switch event {
        case .packet(let packet):
            // A source's encoder-info frame is metadata, not audio: no sink ever sees it. A title
            // waiting for it goes out before the next real packet instead.
            if EncoderInfoFrame.isInfoFrame(packet.bytes, header: packet.header) {
                droppedInfoFrames += 1
                logger.debug("dropped the source's encoder info frame", metadata: ["position": "\(packet.position)"])
                return
            }
            emitPacket(packet, emit: emit)
        case .format(let header):
            emitFormat(header, emit: emit)
        case .linkStarted(let link, let position):
            enqueue(TrackChange(info: TrackInfo(streamTitle: link.comments.streamTitle ?? ""), position: position, source: .linkComments))
        case .skipped(let position, let count):
            logger.log(level: skipsAreExpected ? .debug : .warning, "skipped \(count) bytes that are not audio",
                       metadata: ["position": "\(position)"])
        case .unsupported(let format):
            if unsupportedFormat == nil { unsupportedFormat = format }
        case .malformed(let reason):
            logger.warning("\(reason)")
        case .id3Tag(let tag):
            let read = tag.bytes.withUnsafeBytes { raw in Result { () throws(ID3TagError) in try ID3Reader.readTextFrames(in: raw) } }
            let frames: ID3TextFrames?
            switch read {
            case .success(let parsed):
                frames = parsed
            case .failure(let error):
                logger.warning("ignored an ID3 tag in the stream: \(error)", metadata: ["position": "\(tag.position)"])
                frames = nil
            }
            guard let frames, let title = frames.title, !title.isEmpty else { break }
            let raw = frames.artist.map { "\($0) - \(title)" } ?? title
            enqueue(TrackChange(info: TrackInfo(streamTitle: raw), position: tag.position, source: .id3))
        }
    }

    /// Read after the reader returns: its counter cannot be read from inside its own push.
    private func logCutFrames(since before: Int) {
        let cut = reader.cutFrameCount - before
        guard cut > 0 else { return }
        logger.warning("dropped \(cut) audio frame\(cut == 1 ? "" : "s") cut short by what followed (a stream switch or garbage)",
                       metadata: ["frames dropped so far": "\(reader.cutFrameCount)"])
    }

    private func receive(_ block: MetadataBlock) {
        // A chained stream's titles are its links' own, cut exactly where each link starts.
        if reader.carriesOwnTitles { return }
        let metadata = StreamMetadata.parse(block.bytes, decoding: titleDecoding)
        guard let title = metadata.streamTitle else { return }
        enqueue(TrackChange(info: TrackInfo(streamTitle: title, url: metadata.streamURL), position: block.position, source: .icy))
    }

    /// The same title again is not a change; an empty title is (stations blank it for ads). A new
    /// link always is: it starts a new track with its own headers, whatever its title.
    private func enqueue(_ change: TrackChange) {
        guard change.info.raw != lastRawTitle || change.source.startsLink else { return }
        lastRawTitle = change.info.raw
        // Titles wait for audio; a stream that sends titles and never audio must not pile them
        // up. The oldest goes: a newer title would replace it at the same audio anyway.
        if pending.count >= Self.maxPendingTitles { pending.removeFirst() }
        let index = pending.lastIndex { $0.position <= change.position }.map { $0 + 1 } ?? 0
        pending.insert(change, at: index)
    }
}
