import Foundation

/// Sine tones as 16-bit PCM, interleaved when stereo (both channels carry the same tone).
///
/// Each tone fades in and out over `fadeSeconds` so a track boundary does not click, and may be
/// followed by digital silence (a gap a track splitter can find).
public struct ToneGenerator: Sendable, Hashable {
    public var sampleRate: Int
    public var channels: Int
    /// Peak level as a fraction of full scale.
    public var amplitude: Double
    public var fadeSeconds: Double

    public init(sampleRate: Int = 44100, channels: Int = 2, amplitude: Double = 0.5, fadeSeconds: Double = 0.010) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.amplitude = amplitude
        self.fadeSeconds = fadeSeconds
    }

    /// `toneSeconds` of tone, then `gapSeconds` of zeros.
    public func samples(frequency: Double, toneSeconds: Double, gapSeconds: Double = 0) -> [Int16] {
        let toneFrames = max(0, Int((toneSeconds * Double(sampleRate)).rounded()))
        let gapFrames = max(0, Int((gapSeconds * Double(sampleRate)).rounded()))
        let fadeFrames = min(Int(fadeSeconds * Double(sampleRate)), toneFrames / 2)
        let peak = amplitude * Double(Int16.max)
        let step = 2 * Double.pi * frequency / Double(sampleRate)

        var output = [Int16](repeating: 0, count: (toneFrames + gapFrames) * channels)
        output.withUnsafeMutableBufferPointer { out in
            for frame in 0..<toneFrames {
                let fromEdge = min(frame, toneFrames - 1 - frame)
                let gain = fromEdge < fadeFrames ? Double(fromEdge) / Double(fadeFrames) : 1
                let value = Int16(clamping: Int((peak * gain * sin(step * Double(frame))).rounded()))
                for channel in 0..<channels {
                    out[frame * channels + channel] = value
                }
            }
        }
        return output
    }
}
