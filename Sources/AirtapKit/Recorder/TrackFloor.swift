/// How long a track must last, in seconds of audio (the frames' and pages' own sample counts,
/// not wall time), before a title change may end it: a title that comes sooner names the audio
/// that follows in the same file (or cue sheet entry) instead of starting one of its own.
///
/// A station decides how often its title changes: an ICY title may change at every metadata
/// block, and an Ogg station may start a new chained link every few pages. Without a floor each
/// change is a file (tens of thousands a minute from a hostile station); with it, at most one
/// file per `seconds` of audio. One second is below the shortest segment a station titles on
/// purpose (a two-second station ID or sweeper stays a track of its own), so no real track
/// is ever joined to its neighbour. The first track of a connection is exempt: it is partial,
/// cut by when we tuned in, not by the station, and the next title must end it.
package struct TrackFloor: Sendable, Hashable {
    package var seconds: Double

    package static let standard = TrackFloor(seconds: 1)
    /// Every title change starts a track (tests that feed a few frames per title).
    package static let none = TrackFloor(seconds: 0)

    package init(seconds: Double) {
        self.seconds = seconds
    }

    /// Whether a title change after `trackSeconds` of the current track's audio ends it.
    package func allowsCut(after trackSeconds: Double) -> Bool {
        trackSeconds >= seconds
    }

    /// The warning, said once per connection: what happens to the short tracks.
    var warning: String {
        "a title came less than \(seconds.formatted(decimals: 1)) s of audio after the one before: a track that short is not one of its own; its audio stays with the track being recorded, which the later title names (said once per connection)"
    }
}
