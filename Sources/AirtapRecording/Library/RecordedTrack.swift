import AirtapIngest
import AudioFingerprinting
import FoundationEssentials
import ICYWire
import RecordingRules

/// A file the recorder finished.
package struct RecordedTrack: Sendable, Hashable {
    package let path: String
    package let info: TrackInfo?
    /// False for the first track of a connection, the track cut short by the stop, and tracks under `--min-track`.
    package let isComplete: Bool
    package let frameCount: Int
    package let audioByteCount: Int
    package let seconds: Double
    /// The loudness its ReplayGain tags were written from (nil: not measured, or no tags).
    package var replayGain: ReplayGain? = nil
    /// Of its first two minutes, from the samples decoded while it was recorded (nil: the
    /// library is off). Told to `onFileWritten`, not kept in the recorder's history.
    package var fingerprint: Fingerprint? = nil
    package var codec: AudioCodec?
    /// Of the first frame, bits per second.
    package var bitrate: Int?
    package var startedAt: Date?
    /// Where the split search cut its start, when a title change did.
    package var cut: CutPlacement?
}
