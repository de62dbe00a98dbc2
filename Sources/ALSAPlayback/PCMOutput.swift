import CALSA
#if canImport(Glibc)
import Glibc
#endif

/// A libasound playback device for 16-bit interleaved PCM.
///
/// Device names are ALSA's: `default`, `null`, `hw:0`, or `file:'/tmp/x.wav',wav` to capture.
/// Opening and configuring are separate steps, so a command can fail on a missing device at
/// once, before the stream's format is known. Use from one thread (the player's): the handle
/// is not thread-safe, and the type is deliberately not Sendable.
package final class PCMOutput {
    package struct OutputError: Error, Sendable, Hashable, CustomStringConvertible {
        package let device: String
        package let reason: String
        package var description: String { "cannot play on ALSA device '\(device)': \(reason)" }
    }

    /// What a write or a query found out about the device.
    package enum Condition: Sendable, Hashable {
        case ok
        /// The device ran dry (an xrun, EPIPE) and has been recovered with `snd_pcm_recover`.
        case recoveredUnderrun
    }

    package let device: String
    package private(set) var sampleRate = 0
    package private(set) var channels = 0
    /// The device's buffer in frames, once configured.
    package private(set) var bufferFrames = 0
    private let pcm: OpaquePointer
    private var isConfigured = false

    /// Opens the device; `configure` must follow before the first write.
    package init(device: String) throws(OutputError) {
        calsa_silence_errors()
        var pcm: OpaquePointer?
        let status = snd_pcm_open(&pcm, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard status >= 0, let pcm else { throw OutputError(device: device, reason: Self.reason(status)) }
        self.pcm = pcm
        self.device = device
    }

    /// Opens and configures in one step.
    package convenience init(device: String, sampleRate: Int, channels: Int, latencySeconds: Double = 0.5) throws(OutputError) {
        try self.init(device: device)
        try configure(sampleRate: sampleRate, channels: channels, latencySeconds: latencySeconds)
    }

    deinit {
        snd_pcm_close(pcm)
    }

    /// Sets (or changes, after a format change) rate, channels and latency. What is still queued
    /// at the old format plays out first.
    package func configure(sampleRate: Int, channels: Int, latencySeconds: Double) throws(OutputError) {
        if isConfigured {
            snd_pcm_drain(pcm)
        }
        let status = snd_pcm_set_params(
            pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED,
            UInt32(channels), UInt32(sampleRate), 1, UInt32(max(0.01, latencySeconds) * 1_000_000))
        guard status >= 0 else { throw OutputError(device: device, reason: Self.reason(status)) }
        var buffer: snd_pcm_uframes_t = 0
        var period: snd_pcm_uframes_t = 0
        if snd_pcm_get_params(pcm, &buffer, &period) >= 0 { bufferFrames = Int(buffer) }
        try holdUntilStarted()
        self.sampleRate = sampleRate
        self.channels = channels
        isConfigured = true
    }

    /// Writes never start the device: `start()` does (the player starts it once its buffer is
    /// full, so audio can be written as soon as it is decoded). The device still stops by itself
    /// when it runs dry (an xrun), and holds what is written after recovering until `start()`.
    private func holdUntilStarted() throws(OutputError) {
        var params: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&params) >= 0, let params else {
            throw OutputError(device: device, reason: "out of memory")
        }
        defer { snd_pcm_sw_params_free(params) }
        var boundary: snd_pcm_uframes_t = 0
        var status = snd_pcm_sw_params_current(pcm, params)
        if status >= 0 { status = snd_pcm_sw_params_get_boundary(params, &boundary) }
        if status >= 0 { status = snd_pcm_sw_params_set_start_threshold(pcm, params, boundary) }
        if status >= 0 { status = snd_pcm_sw_params(pcm, params) }
        guard status >= 0 else { throw OutputError(device: device, reason: Self.reason(status)) }
    }

    /// Starts playing what was written; does nothing unless the device is prepared (ALSA
    /// refuses to start one that holds nothing).
    package func start() {
        guard snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED else { return }
        snd_pcm_start(pcm)
    }

    /// Playing: started and not stopped by an xrun, a pause or a drop.
    package var isPlaying: Bool {
        let state = snd_pcm_state(pcm)
        return state == SND_PCM_STATE_RUNNING || state == SND_PCM_STATE_DRAINING
    }

    /// Writes all of `samples` (interleaved). Write no more than `availableFrames()` and it does
    /// not block. A device that ran dry is recovered on the way and holds the frames until `start()`.
    package func write(_ samples: UnsafeBufferPointer<Int16>) throws(OutputError) -> Condition {
        guard var base = samples.baseAddress, channels > 0 else { return .ok }
        var frames = samples.count / channels
        var condition = Condition.ok
        while frames > 0 {
            let written = snd_pcm_writei(pcm, base, snd_pcm_uframes_t(frames))
            if written < 0 {
                condition = try recover(Int32(written))
                continue
            }
            frames -= written
            base += written * channels
        }
        return condition
    }

    /// Frames that can be written without blocking. An xrun found here is recovered and reported.
    package func availableFrames() throws(OutputError) -> (frames: Int, condition: Condition) {
        let available = snd_pcm_avail_update(pcm)
        if available < 0 {
            let condition = try recover(Int32(available))
            return (max(0, snd_pcm_avail_update(pcm)), condition)
        }
        return (available, .ok)
    }

    /// Takes back up to `frames` of the newest frames written and not yet played, leaving at
    /// least `keeping` of what the device says can be rewound. Returns how many it took back
    /// (at most `frames`); the next write goes where they were.
    ///
    /// Only a hardware device or dmix, opened directly: their buffer is what plays. A plugin
    /// may have passed the audio on already and still report it as rewindable (the PulseAudio
    /// plugin has sent it to the server, which would then play it twice).
    package func rewind(frames: Int, keeping: Int) -> Int {
        let type = snd_pcm_type(pcm)
        guard frames > 0, type == SND_PCM_TYPE_HW || type == SND_PCM_TYPE_DMIX else { return 0 }
        let wanted = min(frames, snd_pcm_rewindable(pcm) - keeping)
        guard wanted > 0 else { return 0 }
        let rewound = snd_pcm_rewind(pcm, snd_pcm_uframes_t(wanted))
        return rewound > 0 ? min(Int(rewound), wanted) : 0
    }

    /// Frames written but not yet heard.
    package func delayFrames() -> Int {
        var delay: snd_pcm_sframes_t = 0
        return snd_pcm_delay(pcm, &delay) == 0 ? max(0, delay) : 0
    }

    /// True while the device is playing or waiting for enough frames to start.
    package var isRunning: Bool {
        let state = snd_pcm_state(pcm)
        return state == SND_PCM_STATE_RUNNING || state == SND_PCM_STATE_PREPARED
    }

    /// Holds playback where it is. A device that cannot pause drops what it holds instead and
    /// is prepared again (the audio written next plays after `start()`).
    package func pause() {
        guard snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING else { return }
        if snd_pcm_pause(pcm, 1) < 0 {
            snd_pcm_drop(pcm)
            snd_pcm_prepare(pcm)
        }
    }

    /// Goes on after `pause()`; a device that had to drop is started by `start()`.
    package func resume() {
        if snd_pcm_state(pcm) == SND_PCM_STATE_PAUSED { snd_pcm_pause(pcm, 0) }
    }

    /// After the player ran dry: bring an xrun'd device back to PREPARED (`start()` restarts it).
    package func recoverIfNeeded() throws(OutputError) -> Condition {
        guard snd_pcm_state(pcm) == SND_PCM_STATE_XRUN else { return .ok }
        return try recover(-Int32(EPIPE))
    }

    /// Plays out what is queued.
    package func drain() {
        snd_pcm_drain(pcm)
    }

    /// Discards what is queued.
    package func drop() {
        snd_pcm_drop(pcm)
    }

    /// Discards what is queued and is ready for new frames, which wait for `start()`.
    package func dropAndPrepare() {
        snd_pcm_drop(pcm)
        snd_pcm_prepare(pcm)
    }

    private func recover(_ status: Int32) throws(OutputError) -> Condition {
        let recovered = snd_pcm_recover(pcm, status, 1)
        guard recovered >= 0 else { throw OutputError(device: device, reason: Self.reason(status)) }
        return status == -Int32(EPIPE) ? .recoveredUnderrun : .ok
    }

    private static func reason(_ status: Int32) -> String {
        String(cString: snd_strerror(status))
    }

    /// The PCM names ALSA's configuration knows (`--device help`), with their descriptions.
    package static func knownDevices() -> [(name: String, description: String)] {
        calsa_silence_errors()
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) >= 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var devices: [(name: String, description: String)] = []
        var cursor = hints
        while let hint = cursor.pointee {
            // The strings are malloc'ed copies: ours to free.
            let name = snd_device_name_get_hint(hint, "NAME")
            let description = snd_device_name_get_hint(hint, "DESC")
            defer {
                free(name)
                free(description)
            }
            if let name {
                let text = description.map { String(cString: $0) } ?? ""
                devices.append((String(cString: name), text.split(separator: "\n").joined(separator: " ")))
            }
            cursor += 1
        }
        return devices
    }
}
