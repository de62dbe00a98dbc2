import AirtapSupport
import ICYWire

/// A stream the station's first answer hands over to: a playlist that is itself the stream, in
/// parts it then fetches itself on the loop into its pipeline (HLS). The network session follows
/// one without knowing its format; a `StreamFollowing` makes it.
protocol FollowedStream: AnyObject {
    /// The pipeline its audio and titles go through; the session finishes it at the end.
    var pipeline: IngestPipeline { get }
    /// Starts from the playlist the session already fetched.
    func start(firstPlaylist body: [UInt8])
    /// Cancels what is in flight; nothing is reported after this.
    func stop()
    /// Why the stream ends without audio, in words for the error: `ended` when it ended by
    /// itself, else it is being stopped.
    func noAudioReason(ended: Bool) -> String
}

/// What a followed stream tells the session following it.
struct FollowedStreamEvents {
    /// A stream event out of the pipeline, to the session's splice and sinks.
    var deliver: (StreamEvent) -> Void
    /// The first part answered: the stream is on, with the head its sinks get.
    var streaming: (StreamHead) -> Void
    /// Parts of the stream were lost: audio is missing here.
    var lostAudio: () -> Void
    /// How it ended, told once.
    var ended: (FollowedStreamEnd) -> Void
}

enum FollowedStreamEnd {
    /// The stream's own end, every part fetched.
    case finished
    /// It cannot be followed any more; a reconnect starts again from the station's URL.
    case lost(AirtapError)
    /// This process has no descriptor left for the next transfer.
    case descriptorsExhausted
}

/// Makes the followed stream for an answer that is one. Kept for the session's life, so what it
/// learns across reconnects (which variants failed lately) stays.
protocol StreamFollowing: AnyObject {
    /// The largest first playlist the session reads before handing it over.
    var maxPlaylistBytes: Int { get }
    func follow(_ playlist: [UInt8], at url: String, from candidate: CandidateList.Candidate, lastRawTitle: String?,
                congestion: SinkCongestion, events: FollowedStreamEvents) -> any FollowedStream
}
