import CALSA

/// A libasound playback device for 16-bit interleaved PCM.
///
/// Device names are ALSA's: `default`, `null`, `hw:0`, or `file:'/tmp/x.wav',wav` to capture.
/// Use from one thread (the player's).
public final class PCMOutput {
    public struct OutputError: Error, Sendable, Hashable, CustomStringConvertible {
        public let device: String
        public let reason: String
        public var description: String { "cannot play on ALSA device '\(device)': \(reason)" }
    }

    public let device: String
    public let sampleRate: Int
    public let channels: Int
    public private(set) var underruns = 0
    private let pcm: OpaquePointer

    public init(device: String, sampleRate: Int, channels: Int, latencySeconds: Double = 0.5) throws(OutputError) {
        calsa_silence_errors()
        var pcm: OpaquePointer?
        var status = snd_pcm_open(&pcm, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard status >= 0, let pcm else { throw OutputError(device: device, reason: Self.reason(status)) }
        status = snd_pcm_set_params(
            pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED,
            UInt32(channels), UInt32(sampleRate), 1, UInt32(latencySeconds * 1_000_000))
        guard status >= 0 else {
            snd_pcm_close(pcm)
            throw OutputError(device: device, reason: Self.reason(status))
        }
        self.pcm = pcm
        self.device = device
        self.sampleRate = sampleRate
        self.channels = channels
    }

    deinit {
        snd_pcm_close(pcm)
    }

    /// Writes all of `samples` (interleaved), recovering from underruns, which it counts.
    public func write(_ samples: UnsafeBufferPointer<Int16>) throws(OutputError) {
        guard var base = samples.baseAddress else { return }
        var frames = samples.count / channels
        while frames > 0 {
            let written = snd_pcm_writei(pcm, base, snd_pcm_uframes_t(frames))
            if written < 0 {
                if written == -Int(EPIPE) { underruns += 1 }
                let recovered = snd_pcm_recover(pcm, Int32(written), 1)
                guard recovered >= 0 else { throw OutputError(device: device, reason: Self.reason(recovered)) }
                continue
            }
            frames -= written
            base += written * channels
        }
    }

    /// Frames written but not yet heard.
    public func delayFrames() -> Int {
        var delay: snd_pcm_sframes_t = 0
        return snd_pcm_delay(pcm, &delay) == 0 ? max(0, delay) : 0
    }

    /// Plays out what is queued.
    public func drain() {
        snd_pcm_drain(pcm)
    }

    private static func reason(_ status: Int32) -> String {
        String(cString: snd_strerror(status))
    }
}
