/// What a container reader tells the ingest pipeline, in stream order, whatever the container.
/// The seam a new container (MPEG-TS, fMP4) plugs into: it reads bytes and boundaries and
/// produces these, and nothing downstream asks which container it was.
package enum ContainerEvent: Sendable {
    /// The reader locked on, or the stream's format changed; comes before the packets it describes.
    case format(AudioFrameHeader)
    /// One whole codec unit (a frame, an Ogg page) with its stream position.
    case packet(Packet)
    /// A new link of a chained stream starts at `position`, its comment header read: new stream
    /// headers follow, so it starts a new track even when the title repeats.
    case linkStarted(OggLink, position: Int)
    /// An ID3v2 tag inside the audio (a station's in-band titles; HLS timed metadata).
    case id3Tag(ID3v2Tag)
    /// Bytes that are not part of any packet (joining mid-frame, garbage, a cut-off end).
    case skipped(position: Int, count: Int)
    /// The stream is in a codec airtap cannot read: a permanent answer.
    case unsupported(UnsupportedFormat)
    /// A part of the stream cannot be read and was dropped; reading goes on after it.
    case malformed(String)
}

/// Audio bytes in, `ContainerEvent`s out: the reader for one `Container`, chosen once per
/// connection (or by the first bytes, when the content type did not say).
///
/// Incremental like the readers it holds: the events are the same however the bytes are split.
package struct ContainerReader: Sendable {
    private enum Reader: Sendable {
        /// The first audio bytes, until there are enough to see whether they start an Ogg page.
        case undecided([UInt8])
        case audioFrames(AudioFramer)
        case ogg(OggPacketizer)
        /// Only while a reader is taken out to push into it: moving it keeps its buffer uniquely
        /// referenced, so nothing is copied.
        case taken
    }

    private var reader: Reader
    /// Audio frames dropped because what followed cut them short.
    package private(set) var cutFrameCount = 0

    package init(_ container: Container) {
        switch container {
        case .audioFrames: reader = .audioFrames(AudioFramer())
        case .ogg: reader = .ogg(OggPacketizer())
        case .undecided: reader = .undecided([])
        }
    }

    /// Whether the container carries its titles itself, at exact boundaries (a chained stream's
    /// link comments): titles from outside it (ICY blocks) are then not the stream's.
    package var carriesOwnTitles: Bool {
        if case .ogg = reader { return true }
        return false
    }

    package mutating func push(_ audio: UnsafeRawBufferPointer, _ emit: (ContainerEvent) -> Void) {
        switch reader {
        case .undecided(var prefix):
            reader = .taken
            prefix.append(contentsOf: audio)
            guard prefix.count >= 4 else {
                reader = .undecided(prefix)
                return
            }
            reader = prefix.starts(with: OggPage.capturePattern) ? .ogg(OggPacketizer()) : .audioFrames(AudioFramer())
            prefix.withUnsafeBytes { pushDecided($0, emit) }
        case .audioFrames, .ogg:
            pushDecided(audio, emit)
        case .taken:
            preconditionFailure("the container reader pushed into itself")
        }
    }

    /// End of stream: what is whole goes out, the rest is reported as skipped.
    package mutating func finish(_ emit: (ContainerEvent) -> Void) {
        if case .undecided(let prefix) = reader {
            // Too short to tell: read as frames, which report it as skipped.
            reader = .audioFrames(AudioFramer())
            if !prefix.isEmpty { prefix.withUnsafeBytes { pushDecided($0, emit) } }
        }
        switch reader {
        case .audioFrames(var framer):
            reader = .taken
            framer.finish { Self.translate($0, emit) }
            cutFrameCount = framer.cutFrameCount
            reader = .audioFrames(framer)
        case .ogg(var packetizer):
            reader = .taken
            packetizer.finish { Self.translate($0, emit) }
            reader = .ogg(packetizer)
        case .undecided, .taken:
            break
        }
    }

    private mutating func pushDecided(_ audio: UnsafeRawBufferPointer, _ emit: (ContainerEvent) -> Void) {
        switch reader {
        case .audioFrames(var framer):
            reader = .taken
            framer.push(audio) { Self.translate($0, emit) }
            cutFrameCount = framer.cutFrameCount
            reader = .audioFrames(framer)
        case .ogg(var packetizer):
            reader = .taken
            packetizer.push(audio) { Self.translate($0, emit) }
            reader = .ogg(packetizer)
        case .undecided, .taken:
            preconditionFailure("push before the container is known")
        }
    }

    private static func translate(_ event: FramerEvent, _ emit: (ContainerEvent) -> Void) {
        switch event {
        case .packet(let packet): emit(.packet(packet))
        case .synced(let header): emit(.format(header))
        case .id3Tag(let tag): emit(.id3Tag(tag))
        case .skipped(let position, let count): emit(.skipped(position: position, count: count))
        }
    }

    private static func translate(_ event: OggStreamEvent, _ emit: (ContainerEvent) -> Void) {
        switch event {
        case .linkStarted(let link, let position):
            // A link's title is exact: it applies from the link's first header page.
            emit(.format(.oggPage(OggPageHeader(link: link, kind: .header, isLinkStart: true, pageLength: 0, granulePosition: 0,
                                                 samples: 0))))
            emit(.linkStarted(link, position: position))
        case .packet(let packet):
            emit(.packet(packet))
        case .skipped(let position, let count):
            emit(.skipped(position: position, count: count))
        case .unsupported(let codec):
            let name = codec == .unknown ? "an unknown codec in Ogg" : "\(codec.rawValue) in Ogg"
            emit(.unsupported(UnsupportedFormat(mediaType: "audio/ogg", name: name)))
        case .malformed(let reason):
            emit(.malformed("an Ogg link cannot be read, skipping to the next: \(reason)"))
        }
    }
}
