/// Exactly what one client receives after the response head: audio from `startOffset` on, with an
/// ICY metadata block every `metaint` audio bytes when the client asked for metadata.
///
/// A pure state machine: the server feeds its sockets from one, and a test can render the same
/// bytes with `render(...)` to compare against what arrived.
package struct StationTransmission: Sendable {
    enum Chunk: Sendable, Hashable {
        case audio(ArraySlice<UInt8>)
        /// A metadata block (length byte included). `title` is nil for a 1-byte "no change" block.
        case metadata([UInt8], title: String?)
    }

    /// A title as announced to the client: after `audioOffset` audio bytes of the connection.
    package struct TitleEvent: Sendable, Hashable {
        package var audioOffset: Int
        package var title: String
        package init(audioOffset: Int, title: String) {
            self.audioOffset = audioOffset
            self.title = title
        }
    }

    package let program: StationProgram
    /// Stream offset of the first audio byte.
    package let startOffset: Int
    /// nil when the client did not send `Icy-MetaData: 1`.
    package let metaint: Int?
    /// Audio bytes the connection carries before it ends; nil for an endless stream.
    package let audioLimit: Int?
    /// Sent as `StreamUrl`.
    package let streamURL: String
    /// Audio bytes between a track boundary and the announcement of its title: negative = early.
    /// A title goes out in the first block at or after `boundary + metaOffset`.
    package let metaOffset: Int
    /// Titles go out as `HostileTitle` bytes.
    package let hostileTitles: Bool

    package private(set) var audioSent = 0
    private var audioUntilMetadata: Int
    private var lastTitle: String?
    /// Titles announced so far: the hostile mode gives each the next kind of trouble.
    private var titlesAnnounced = 0

    package init(program: StationProgram, startOffset: Int = 0, metaint: Int?, audioLimit: Int? = nil, streamURL: String,
                metaOffset: Int = 0, hostileTitles: Bool = false) {
        precondition(startOffset >= 0, "start offset must not be negative")
        precondition(metaint.map { $0 > 0 } ?? true, "metaint must be positive")
        self.program = program
        self.startOffset = startOffset
        self.metaint = metaint
        self.audioLimit = audioLimit
        self.streamURL = streamURL
        self.metaOffset = metaOffset
        self.hostileTitles = hostileTitles
        self.audioUntilMetadata = metaint ?? 0
    }

    package var isFinished: Bool { audioLimit.map { audioSent >= $0 } ?? false }

    /// Emits up to `maxAudioBytes` more audio, with the metadata blocks that fall inside it, in
    /// wire order. A block is emitted only just before the audio byte it precedes, so a stream
    /// never ends with a block and pausing at any point does not change the bytes.
    mutating func next(maxAudioBytes: Int, _ emit: (Chunk) -> Void) {
        var budget = maxAudioBytes
        if let audioLimit { budget = min(budget, audioLimit - audioSent) }
        let loop = program.loop
        while budget > 0 {
            if let metaint, audioUntilMetadata == 0 {
                emit(metadataChunk())
                audioUntilMetadata = metaint
            }
            let position = (startOffset + audioSent) % loop.count
            var count = min(budget, loop.count - position)
            if metaint != nil { count = min(count, audioUntilMetadata) }
            emit(.audio(loop[position..<position + count]))
            audioSent += count
            audioUntilMetadata -= count
            budget -= count
        }
    }

    /// The first block always names the title; later ones only when the track playing at the
    /// next audio byte has a different title from the last one announced, else a 0 length byte.
    /// With a meta offset, "playing" is judged `metaOffset` bytes earlier: an early title (negative
    /// offset) names the track that starts within the next `-metaOffset` bytes; a late one still
    /// names the previous track for `metaOffset` bytes after the boundary.
    private mutating func metadataChunk() -> Chunk {
        let track = program.track(atStreamOffset: startOffset + audioSent - metaOffset)
        guard track.title != lastTitle else { return .metadata([0], title: nil) }
        lastTitle = track.title
        titlesAnnounced += 1
        guard hostileTitles else {
            return .metadata(Self.metadataBlock(title: track.title, url: streamURL), title: track.title)
        }
        let value = HostileTitle.value(of: track.title, kind: titlesAnnounced - 1, url: streamURL)
        return .metadata(Self.metadataBlock(titleBytes: value, url: streamURL), title: HostileTitle.decoded(value))
    }

    /// `StreamTitle='…';StreamUrl='…';` as raw UTF-8 (quotes and semicolons unescaped, as stations
    /// send them), NUL-padded to a multiple of 16, behind its length byte (length / 16).
    /// A title too long for the 4080-byte maximum is cut at a character boundary.
    package static func metadataBlock(title: String, url: String) -> [UInt8] {
        let maxPayload = 255 * 16
        let fixed = "StreamTitle='';StreamUrl='\(url)';".utf8.count
        var titleBytes = 0
        var cut = title.startIndex
        for index in title.unicodeScalars.indices {
            let size = title.unicodeScalars[index].utf8.count
            guard fixed + titleBytes + size <= maxPayload else { break }
            titleBytes += size
            cut = title.unicodeScalars.index(after: index)
        }
        let text = "StreamTitle='\(String(title.unicodeScalars[..<cut]))';StreamUrl='\(url)';"
        var payload = Array(text.utf8.prefix(maxPayload))
        let blocks = (payload.count + 15) / 16
        payload += [UInt8](repeating: 0, count: blocks * 16 - payload.count)
        return [UInt8(blocks)] + payload
    }

    /// As `metadataBlock(title:url:)`, for a title that is bytes, not text (the caller keeps it
    /// within the 4080 bytes a block can hold: longer ones are cut, closing quote and all).
    package static func metadataBlock(titleBytes: [UInt8], url: String) -> [UInt8] {
        var payload = Array((Array("StreamTitle='".utf8) + titleBytes + Array("';StreamUrl='\(url)';".utf8)).prefix(255 * 16))
        let blocks = (payload.count + 15) / 16
        payload += [UInt8](repeating: 0, count: blocks * 16 - payload.count)
        return [UInt8(blocks)] + payload
    }

    /// The whole of a transmission of `audioCount` audio bytes, rendered at once.
    package struct Rendered: Sendable, Hashable {
        /// What went over the wire after the head.
        package var bytes: [UInt8] = []
        /// The audio alone (equals `program.audio(from: startOffset, count: audioCount)`).
        package var audio: [UInt8] = []
        /// Each title announced, in order.
        package var titles: [TitleEvent] = []
    }

    package static func render(
        program: StationProgram, startOffset: Int = 0, metaint: Int?, audioCount: Int, streamURL: String,
        metaOffset: Int = 0, hostileTitles: Bool = false
    ) -> Rendered {
        var transmission = StationTransmission(
            program: program, startOffset: startOffset, metaint: metaint, audioLimit: audioCount, streamURL: streamURL,
            metaOffset: metaOffset, hostileTitles: hostileTitles)
        var rendered = Rendered()
        transmission.next(maxAudioBytes: audioCount) { chunk in
            switch chunk {
            case let .audio(bytes):
                rendered.bytes += bytes
                rendered.audio += bytes
            case let .metadata(block, title):
                rendered.bytes += block
                if let title {
                    rendered.titles.append(TitleEvent(audioOffset: rendered.audio.count, title: title))
                }
            }
        }
        return rendered
    }
}
