import ICYWire
import ID3Tagging
import Logging

/// Bytes off the wire in, ordered stream events out: ICY demuxer, then framer, then titles.
///
/// Titles wait in `pending` until the framer has emitted every packet that starts before
/// them, so a sink can cut exactly where the event falls in the sequence.
/// Loop-confined: one pipeline per connection, used only on the ingest thread.
package final class IngestPipeline {
    private var demuxer: ICYDemuxer
    private var framer = AudioFramer()
    /// Set for an Ogg stream: pages instead of frames, titles from each link's comments.
    private var ogg: OggPacketizer?
    /// An Ogg link in a codec airtap cannot read: the session ends with it, not retried.
    private(set) var unsupportedFormat: UnsupportedFormat?
    private var pending: [TrackChange] = []
    private(set) var lastRawTitle: String?
    private var format: AudioFrameHeader?
    private let titleDecoding: TitleDecoding
    private let logger: Logger

    /// Set while the connection winds down: a cut-off last frame is expected then, not news.
    private var isFinishing = false
    private(set) var packetCount = 0
    private(set) var audioByteCount = 0
    /// A source's own LAME/Xing/VBRI frames dropped (see `EncoderInfoFrame`).
    private(set) var droppedInfoFrames = 0

    /// `lastRawTitle`: the title the previous connection ended with, so a reconnect that
    /// announces it again is no change.
    /// Without a telling content type (octet-stream, none): the first audio bytes, until there are
    /// enough to see whether they are an Ogg page ("OggS"); nil once decided.
    private var sniffed: [UInt8]?

    /// `isOgg`: the body is an Ogg stream (the content type said so). `sniffsOgg`: the content
    /// type says nothing; an Ogg stream is known by its first bytes.
    init(metaint: Int?, titleDecoding: TitleDecoding, logger: Logger, lastRawTitle: String? = nil, isOgg: Bool = false,
         sniffsOgg: Bool = false) {
        self.demuxer = ICYDemuxer(metaint: metaint)
        self.ogg = isOgg ? OggPacketizer() : nil
        self.sniffed = !isOgg && sniffsOgg ? [] : nil
        self.lastRawTitle = lastRawTitle
        self.titleDecoding = titleDecoding
        self.logger = logger
    }

    package convenience init(metaint: Int?, charset: TextCharset, logger: Logger, lastRawTitle: String? = nil, isOgg: Bool = false,
                     sniffsOgg: Bool = false) {
        self.init(metaint: metaint, titleDecoding: TitleDecoding(fallback: charset), logger: logger, lastRawTitle: lastRawTitle,
                  isOgg: isOgg, sniffsOgg: sniffsOgg)
    }

    package func consume(_ bytes: UnsafeRawBufferPointer, emit: (StreamEvent) -> Void) {
        let cutFramesBefore = framer.cutFrameCount
        let shortBlocksBefore = demuxer.shortBlockCount
        demuxer.consume(bytes, onAudio: { route($0, emit: emit) }, onMetadata: { receive($0) })
        logShortBlocks(since: shortBlocksBefore)
        logCutFrames(since: cutFramesBefore)
    }

    /// Audio out of the demuxer: to the sniffer until the format is known, then to its framer.
    private func route(_ audio: UnsafeRawBufferPointer, emit: (StreamEvent) -> Void) {
        if sniffed != nil {
            sniff(audio, emit: emit)
        } else if ogg != nil {
            ogg?.push(audio) { handle($0, emit: emit) }
        } else {
            framer.push(audio) { handle($0, emit: emit) }
        }
    }

    private func logShortBlocks(since before: Int) {
        guard demuxer.shortBlockCount > before else { return }
        logger.warning("a metadata block was shorter than its length byte said: realigned on its real end",
                       metadata: ["short blocks so far": "\(demuxer.shortBlockCount)"])
    }

    /// End of the connection: the last whole frame, then any title still waiting.
    package func finish(emit: (StreamEvent) -> Void) {
        let shortBlocksBefore = demuxer.shortBlockCount
        demuxer.finish(onAudio: { route($0, emit: emit) }, onMetadata: { receive($0) })
        logShortBlocks(since: shortBlocksBefore)
        isFinishing = true
        if let prefix = sniffed, !prefix.isEmpty {
            sniffed = nil
            prefix.withUnsafeBytes { bytes in framer.push(bytes) { handle($0, emit: emit) } }
        }
        let cutFramesBefore = framer.cutFrameCount
        if ogg != nil {
            ogg?.finish { handle($0, emit: emit) }
        } else {
            framer.finish { handle($0, emit: emit) }
        }
        logCutFrames(since: cutFramesBefore)
        for change in pending { emit(.metadata(change)) }
        pending.removeAll()
    }

    private func handle(_ event: FramerEvent, emit: (StreamEvent) -> Void) {
        switch event {
        case .packet(let packet):
            // A source's encoder-info frame is metadata, not audio: no sink ever sees it. A title
            // waiting for it goes out before the next real packet instead.
            if EncoderInfoFrame.isInfoFrame(packet.bytes, header: packet.header) {
                droppedInfoFrames += 1
                logger.debug("dropped the source's encoder info frame", metadata: ["position": "\(packet.position)"])
                return
            }
            while let first = pending.first, first.position <= packet.position {
                emit(.metadata(first))
                pending.removeFirst()
            }
            packetCount += 1
            audioByteCount += packet.bytes.count
            emit(.packet(packet))
        case .synced(let header):
            if let format, format.isCompatible(with: header), format.channels == header.channels { break }
            format = header
            emit(.format(header))
        case .skipped(let position, let count):
            // Joining mid-frame (Icecast's burst starts anywhere) and a cut-off last frame are
            // normal; garbage between frames is news.
            let isExpected = isFinishing || packetCount == 0
            logger.log(level: isExpected ? .debug : .warning, "skipped \(count) bytes that are not audio frames",
                       metadata: ["position": "\(position)"])
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

    /// Read after the framer returns: its counter cannot be read from inside its own push.
    private func logCutFrames(since before: Int) {
        let cut = framer.cutFrameCount - before
        guard cut > 0 else { return }
        logger.warning("dropped \(cut) audio frame\(cut == 1 ? "" : "s") cut short by what followed (a stream switch or garbage)",
                       metadata: ["frames dropped so far": "\(framer.cutFrameCount)"])
    }

    private func sniff(_ audio: UnsafeRawBufferPointer, emit: (StreamEvent) -> Void) {
        guard var prefix = sniffed else { return }
        prefix.append(contentsOf: audio)
        guard prefix.count >= 4 else {
            sniffed = prefix
            return
        }
        sniffed = nil
        if prefix.starts(with: Array("OggS".utf8)) {
            ogg = OggPacketizer()
            ogg?.push(prefix) { handle($0, emit: emit) }
        } else {
            prefix.withUnsafeBytes { bytes in framer.push(bytes) { handle($0, emit: emit) } }
        }
    }

    private func handle(_ event: OggStreamEvent, emit: (StreamEvent) -> Void) {
        switch event {
        case .linkStarted(let link, let position):
            // A link's title is exact: it goes out right before the link's first header page.
            let header = OggPageHeader(link: link, kind: .header, isLinkStart: true, pageLength: 0, granulePosition: 0, samples: 0)
            if format?.isCompatible(with: .ogg(header)) != true {
                format = .ogg(header)
                emit(.format(.ogg(header)))
            }
            let title = link.comments.streamTitle ?? ""
            lastRawTitle = title
            emit(.metadata(TrackChange(info: TrackInfo(streamTitle: title), position: position, source: .ogg)))
        case .packet(let packet):
            packetCount += 1
            audioByteCount += packet.bytes.count
            emit(.packet(packet))
        case .skipped(let position, let count):
            let isExpected = isFinishing || packetCount == 0
            logger.log(level: isExpected ? .debug : .warning, "skipped \(count) bytes that are not Ogg pages",
                       metadata: ["position": "\(position)"])
        case .unsupported(let codec):
            if unsupportedFormat == nil {
                let name = codec == .unknown ? "an unknown codec in Ogg" : "\(codec.rawValue) in Ogg"
                unsupportedFormat = UnsupportedFormat(mediaType: "audio/ogg", name: name)
            }
        case .malformed(let reason):
            logger.warning("an Ogg link cannot be read, skipping to the next: \(reason)")
        }
    }
    private func receive(_ block: MetadataBlock) {
        let metadata = StreamMetadata.parse(block.bytes, decoding: titleDecoding)
        guard let title = metadata.streamTitle else { return }
        enqueue(TrackChange(info: TrackInfo(streamTitle: title, url: metadata.streamURL), position: block.position, source: .icy))
    }

    /// The same title again is not a change; an empty title is (stations blank it for ads).
    private func enqueue(_ change: TrackChange) {
        guard change.info.raw != lastRawTitle else { return }
        lastRawTitle = change.info.raw
        let index = pending.lastIndex { $0.position <= change.position }.map { $0 + 1 } ?? 0
        pending.insert(change, at: index)
    }
}
