/// How long a track must last, in seconds of audio (not wall time), before a title change may
/// end it: a title that comes sooner names the audio that follows in the same file (or cue sheet
/// entry) instead of starting one of its own.
///
/// A station decides how often its title changes: an ICY title may change at every metadata
/// block, and an Ogg station may start a new chained link every few pages. Without a floor each
/// change is a file (tens of thousands a minute from a hostile station); with it, at most one
/// file per `seconds` of audio. One second is below the shortest segment a station titles on
/// purpose (a two-second station ID or sweeper stays a track of its own), so no real track
/// is ever joined to its neighbour. The first track of a connection is exempt: it is partial,
/// cut by when we tuned in, not by the station, and the next title must end it.
///
/// The seconds are the station's own claim (frames' sample counts, Ogg granules), so they are
/// trusted only as far as the bytes carry them: a track counts at most its bytes at
/// `minimumBytesPerSecond`. No real station sends less, so an honest track's seconds are its
/// samples; a station whose tiny frames or pages claim seconds each still gets at most one file
/// per `seconds × minimumBytesPerSecond` bytes.
package struct TrackFloor: Sendable, Hashable {
    package var seconds: Double

    /// 8 kbit/s: below what any codec a radio station uses sends for real audio (MP3 is 32 kbit/s
    /// and up, HE-AAC v2 and speech Opus stations 12 kbit/s and up, 4000 and 1500 B/s). Only an
    /// Opus stream under 8 kbit/s counts less than its samples: at 6 kbit/s a second of audio
    /// counts 0.75 s, so its titles must be 1.33 s apart, not 1 s, to be tracks of their own.
    package static let minimumBytesPerSecond = 1000

    package static let standard = TrackFloor(seconds: 1)
    /// Every title change starts a track (tests that feed a few frames per title).
    package static let none = TrackFloor(seconds: 0)

    package init(seconds: Double) {
        self.seconds = seconds
    }

    /// The seconds the floor believes of a track that claims `claimedSeconds` in `bytes`: the
    /// smaller of the claim and the bytes at `minimumBytesPerSecond`.
    package static func trustedSeconds(claimed claimedSeconds: Double, bytes: Int) -> Double {
        min(claimedSeconds, Double(max(0, bytes)) / Double(minimumBytesPerSecond))
    }

    /// Whether a title change after a track of `claimedSeconds` in `bytes` ends it.
    package func allowsCut(after claimedSeconds: Double, bytes: Int) -> Bool {
        Self.trustedSeconds(claimed: claimedSeconds, bytes: bytes) >= seconds
    }

    /// The warning, said once per connection: what happens to the short tracks.
    var warning: String {
        "a title came less than \(seconds.formatted(decimals: 1)) s of audio after the one before: a track that short is not one of its own; its audio stays with the track being recorded, which the later title names (said once per connection)"
    }

    /// The warning for a station whose format (codec, sample rate) changes before the floor,
    /// said once per connection.
    var formatWarning: String {
        "the stream's format changed less than \(seconds.formatted(decimals: 1)) s of audio after the file began: a file keeps one format, so the audio of each format goes on in the file already open for it (said once per connection)"
    }
}
