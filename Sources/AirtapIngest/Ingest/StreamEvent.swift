import AirtapSupport
import ICYWire

/// What the ingest core tells sinks, in stream order.
package enum StreamEvent: Sendable {
    /// The session is connecting, streaming or waiting to reconnect; the stop comes as `.ended`.
    /// In order with the other events, so a sink that reports both (the JSON lines, the relay's
    /// status, the player's state) needs no second channel and never shows them out of order.
    case connection(ConnectionState)
    /// The server's answer, once per connection.
    case head(StreamHead)
    /// The framer locked on, or the stream's format changed.
    case format(AudioFrameHeader)
    /// One whole audio frame.
    case packet(Packet)
    /// A new title. Every packet before `position` came before this event; every later one follows it.
    case metadata(TrackChange)
    /// Audio is missing at this point (a reconnect without overlap).
    case discontinuity(position: Int)
    /// The last event of a session.
    case ended(StopReason)
}

package struct StreamHead: Sendable, Hashable {
    package let response: ResponseHead
    /// The URL the audio finally came from (after playlists and redirects).
    package let url: String
    /// An HLS station's playlists (the response is then its first segment's); nil otherwise.
    package var hls: HLSStreamDescription? = nil
    /// The stream begins where its program begins, and its end of stream is the program's end
    /// (an HLS VOD playlist fetched from its first segment), not a station cut off mid-song.
    package var isWholeProgram = false
}

/// What an HLS station's playlists say, for probe and `--json`.
package struct HLSStreamDescription: Sendable, Hashable {
    package struct Variant: Sendable, Hashable {
        package var bandwidth: Int
        package var codecs: [String]
    }

    /// The master playlist's variants, in its order (empty when the station is a media playlist).
    package var variants: [Variant] = []
    package var chosenVariant: Int?
    package var targetDuration: Int
    /// No `#EXT-X-ENDLIST`: a sliding window, joined near its live edge.
    package var isLive: Bool
    /// Seconds of segments between the first one fetched and the playlist's end.
    package var secondsBehindLiveEdge: Double
    /// "packed audio", "MPEG-TS" or "fMP4".
    package var container: String
    package var isEncrypted: Bool
    /// The first segment fetched is the playlist's first.
    package var startsAtFirstSegment = false
}

package struct TrackChange: Sendable, Hashable {
    package enum Source: String, Sendable, Hashable {
        /// An ICY metadata block's StreamTitle.
        case icy
        /// An ID3v2 tag inside the audio.
        case id3
        /// The comment header of a new link of a chained stream (Vorbis comments, OpusTags).
        case linkComments = "ogg"
        /// An HLS playlist's `#EXTINF` title, or timed ID3 in a segment, at the audio it is stamped with.
        case timedMetadata = "hls"

        /// The title starts a new link, and with it a new track, even when it repeats the last.
        package var startsLink: Bool { self == .linkComments }
        /// Stamped with the audio it applies to, and sent when the song changes: a title after the
        /// audio a connection began with starts a song there, it does not name what was playing.
        package var isTimed: Bool { self == .timedMetadata }
        /// Artist and title came as fields of their own, not as one "Artist - Title" line.
        package var separatesArtist: Bool { self == .linkComments }
    }

    package let info: TrackInfo
    /// Audio-stream byte offset of the cut: where the title arrived, unless a `SplitAligner` moved
    /// the event to a better frame boundary (then the start of the first packet after it).
    package let position: Int
    package let source: Source
    /// Audio-stream byte offset the title arrived at (equals `position` unless the cut was moved).
    package let announcedPosition: Int
    /// What placed the cut, once a split search decided it.
    package let placement: CutPlacement?

    package init(info: TrackInfo, position: Int, source: Source, announcedPosition: Int? = nil,
                 placement: CutPlacement? = nil) {
        self.info = info
        self.position = position
        self.source = source
        self.announcedPosition = announcedPosition ?? position
        self.placement = placement
    }

    /// The same title, cut at `position` instead, for the reason `placement` gives.
    package func moved(to position: Int, placement: CutPlacement) -> TrackChange {
        TrackChange(info: info, position: position, source: source, announcedPosition: announcedPosition, placement: placement)
    }
}

/// What a split search placed a cut by, and how far from the title's arrival (seconds of audio;
/// negative: before it).
package struct CutPlacement: Sendable, Hashable {
    package enum Reason: String, Sendable, Hashable {
        /// Where the title arrived (plus any offset): nothing better was found.
        case title
        /// In a silence.
        case silence
        /// Where the music changes at once (a hard cut), near where the station's title delay
        /// says the song changed.
        case edge
        /// Where the station's title delay says the song changed.
        case delay
    }

    package var reason: Reason
    package var shiftSeconds: Double
    /// The title delay the search corrected by, if any.
    package var titleDelaySeconds: Double?

    package init(reason: Reason, shiftSeconds: Double, titleDelaySeconds: Double? = nil) {
        self.reason = reason
        self.shiftSeconds = shiftSeconds
        self.titleDelaySeconds = titleDelaySeconds
    }
}

/// Where events go. `receive` runs on the ingest thread: it must return quickly (wrap slow
/// work in a `QueuedSink`). A sink that throws is detached and logged; the others go on.
///
/// Beside the events, a sink has three side channels, each declared by the sinks that use it
/// (the others get the defaults below): where a network batch ends, back-pressure, and a place
/// for the audio a split search in front of it holds back.
package protocol StreamSink: Sendable {
    func receive(_ event: StreamEvent) throws

    /// For a sink that keeps some of what it received in memory (a recorder's unwritten appends,
    /// the split search's held-back audio). Its `QueuedSink` calls this each time it has handed
    /// over everything that had arrived: that is the end of a network batch, and what is on disk
    /// then is all that was received. A kill loses what the network loop had not read yet, not
    /// that plus a second of the recorder's own buffering (the network loop reads in batches of
    /// a second, and a kill should cost no more than that). Called on the sink's queue, like
    /// `receive`.
    func batchEnded()

    /// The sink's back-pressure, when it can fall behind without dropping (a lossless queue in
    /// front of a disk); nil for a sink that never asks the transfer to wait.
    var congestion: (any CongestionSignalling)? { get }

    /// Where a split search in front of this sink sends the audio it holds back (see
    /// `HeldBackAudioSink`); nil for a sink that has nowhere to keep it.
    var heldBackAudio: (any HeldBackAudioSink)? { get }
}

extension StreamSink {
    /// Most sinks keep nothing back between events.
    package func batchEnded() {}
    package var congestion: (any CongestionSignalling)? { nil }
    package var heldBackAudio: (any HeldBackAudioSink)? { nil }
}

/// A sink that can fall behind without dropping (a lossless queue in front of a disk): the
/// session pauses the station's transfer while it is congested, instead of buffering without
/// bound. Only that station waits; nothing is lost, since curl keeps the unread bytes.
package protocol CongestionSignalling: Sendable {
    var isCongested: Bool { get }
    /// Calls `relieved` once, when the backlog has shrunk (at once if it already has).
    func notifyWhenRelieved(_ relieved: @escaping @Sendable () -> Void)
}

/// A recorder behind the split search, which holds seconds of audio back: it is handed that
/// audio now and then, to keep on disk past what it has recorded, so a killed process does not
/// lose it. The same packets reach it later through `receive` as usual.
package protocol HeldBackAudioSink: Sendable {
    func holdBack(_ packets: [Packet])
}
