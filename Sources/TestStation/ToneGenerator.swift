import Foundation

/// Sine tones as 16-bit PCM, interleaved when stereo (both channels carry the same tone).
///
/// Each tone fades in and out over `fadeSeconds` so a track boundary does not click, and may be
/// followed by digital silence (a gap a track splitter can find).
struct ToneGenerator: Sendable, Hashable {
    package var sampleRate: Int
    package var channels: Int
    /// Peak level as a fraction of full scale.
    package var amplitude: Double
    package var fadeSeconds: Double

    package init(sampleRate: Int = 44100, channels: Int = 2, amplitude: Double = 0.5, fadeSeconds: Double = 0.010) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.amplitude = amplitude
        self.fadeSeconds = fadeSeconds
    }

    /// `toneSeconds` of tone, then `gapSeconds` of zeros.
    ///
    /// - Parameters:
    ///   - fadeOutSeconds: the tone's last this-many seconds ramp linearly down to zero (on top of
    ///     the short edge fade), as a song fading into a gap does.
    ///   - quiet: a stretch of the tone (seconds from its start) scaled to `gain` of full level.
    package func samples(frequency: Double, toneSeconds: Double, gapSeconds: Double = 0, fadeOutSeconds: Double = 0,
                        quiet: (start: Double, seconds: Double, gain: Double)? = nil) -> [Int16] {
        let toneFrames = max(0, Int((toneSeconds * Double(sampleRate)).rounded()))
        let gapFrames = max(0, Int((gapSeconds * Double(sampleRate)).rounded()))
        let fadeFrames = min(Int(fadeSeconds * Double(sampleRate)), toneFrames / 2)
        let fadeOutFrames = min(max(0, Int((fadeOutSeconds * Double(sampleRate)).rounded())), toneFrames)
        let quietRange: Range<Int> = quiet.map { quiet in
            let start = min(toneFrames, max(0, Int((quiet.start * Double(sampleRate)).rounded())))
            let end = min(toneFrames, max(start, Int(((quiet.start + quiet.seconds) * Double(sampleRate)).rounded())))
            return start..<end
        } ?? 0..<0
        let quietGain = quiet?.gain ?? 1
        let peak = amplitude * Double(Int16.max)
        let step = 2 * Double.pi * frequency / Double(sampleRate)

        var output = [Int16](repeating: 0, count: (toneFrames + gapFrames) * channels)
        output.withUnsafeMutableBufferPointer { out in
            for frame in 0..<toneFrames {
                let fromEdge = min(frame, toneFrames - 1 - frame)
                var gain = fromEdge < fadeFrames ? Double(fromEdge) / Double(fadeFrames) : 1
                let toEnd = toneFrames - frame
                if toEnd <= fadeOutFrames { gain *= Double(toEnd - 1) / Double(fadeOutFrames) }
                if quietRange.contains(frame) { gain *= quietGain }
                let value = Int16(clamping: Int((peak * gain * sin(step * Double(frame))).rounded()))
                for channel in 0..<channels {
                    out[frame * channels + channel] = value
                }
            }
        }
        return output
    }
}
