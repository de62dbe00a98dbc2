import ALSAPlayback
import Dispatch

/// Where the player's PCM goes: ALSA for listeners; tests may put anything behind it.
/// Created and used on the player thread only (C handles are not thread-safe).
protocol AudioOutput: AnyObject {
    /// Sets the format; called before the first write and whenever the stream's format changes.
    func configure(sampleRate: Int, channels: Int) throws(AirtapError)
    /// Frames that can be written now without blocking.
    func writableFrames() throws(AirtapError) -> OutputProgress
    /// Writes interleaved samples (at most `writableFrames()` frames).
    func write(_ samples: UnsafeBufferPointer<Int16>) throws(AirtapError) -> OutputProgress
    /// Frames written but not yet heard.
    var delayFrames: Int { get }
    func pause()
    func resume()
    /// After the player ran dry and waited for its buffer: make the device playable again.
    func recover() throws(AirtapError)
    /// Frames still to be heard before the end; 0 once all of it played.
    func drainStep() -> Int
    /// Discards what the device holds.
    func stop()
}

/// What the device said while being written to.
struct OutputProgress {
    var frames: Int
    /// The device ran dry (xrun) and was recovered on the way.
    var recoveredUnderrun: Bool
}

/// A monotonic clock in seconds. Injected so the emulated playhead can be tested without waiting.
protocol PlaybackClock: Sendable {
    func now() -> Double
}

struct SystemPlaybackClock: PlaybackClock {
    func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}

/// Where a device that does not keep time (`null`, `file:`) would be playing, by the clock.
///
/// ALSA's `null` and `file` PCMs take any amount of audio at once and report no delay; a player
/// that trusted them would race through the stream and see an underrun after every packet. Like
/// mpv's null output, airtap plays into them in real time: frames count as heard as the clock
/// advances, and the device "runs dry" when the clock catches up with what was written.
struct EmulatedPlayhead {
    private(set) var sampleRate: Int
    /// Frames written, in total.
    private(set) var written = 0
    /// Playing since (clock, frames heard then); nil while stopped, paused or dry.
    private var anchor: (time: Double, frames: Int)?
    private var heldFrames = 0

    init(sampleRate: Int) {
        self.sampleRate = sampleRate
    }

    func heard(at now: Double) -> Int {
        guard let anchor else { return heldFrames }
        return min(written, anchor.frames + Int((now - anchor.time) * Double(sampleRate)))
    }

    func delay(at now: Double) -> Int { written - heard(at: now) }

    /// Records a write; playback (re)starts from the current position when the device was dry.
    mutating func wrote(_ frames: Int, at now: Double) {
        let position = heard(at: now)
        if anchor == nil || position >= written {
            anchor = (now, position)
        }
        written += frames
    }

    mutating func pause(at now: Double) {
        heldFrames = heard(at: now)
        anchor = nil
    }

    mutating func resume(at now: Double) {
        if written > heldFrames { anchor = (now, heldFrames) }
    }

    /// Drops what was not heard yet.
    mutating func stop(at now: Double) {
        heldFrames = heard(at: now)
        written = heldFrames
        anchor = nil
    }
}

/// ALSA playback. Devices that keep time are written as far as `snd_pcm_avail` allows; devices
/// that do not (their delay stays 0 after a write) are paced by an `EmulatedPlayhead`.
final class ALSAAudioOutput: AudioOutput {
    private let pcm: PCMOutput
    private let latencySeconds: Double
    private let clock: any PlaybackClock
    /// Decided by the first write: nil until then.
    private var emulated: EmulatedPlayhead?
    private var keepsTime: Bool?
    private var latencyFrames = 0

    init(device: String, latencySeconds: Double, clock: any PlaybackClock = SystemPlaybackClock()) throws(AirtapError) {
        do {
            pcm = try PCMOutput(device: device)
        } catch {
            throw .localIO("\(error) (choose one with --device; --device help lists the names ALSA knows)")
        }
        self.latencySeconds = latencySeconds
        self.clock = clock
    }

    func configure(sampleRate: Int, channels: Int) throws(AirtapError) {
        do {
            try pcm.configure(sampleRate: sampleRate, channels: channels, latencySeconds: latencySeconds)
        } catch {
            throw .localIO(error.description)
        }
        latencyFrames = max(1, Int(latencySeconds * Double(sampleRate)))
        if keepsTime == false { emulated = EmulatedPlayhead(sampleRate: sampleRate) }
    }

    func writableFrames() throws(AirtapError) -> OutputProgress {
        if let emulated {
            return OutputProgress(frames: max(0, latencyFrames - emulated.delay(at: clock.now())), recoveredUnderrun: false)
        }
        do {
            let (frames, condition) = try pcm.availableFrames()
            // Before the first write nothing is known about timing: allow one latency's worth.
            let limit = keepsTime == nil ? min(frames, latencyFrames) : frames
            return OutputProgress(frames: limit, recoveredUnderrun: condition == .recoveredUnderrun)
        } catch {
            throw .localIO(error.description)
        }
    }

    func write(_ samples: UnsafeBufferPointer<Int16>) throws(AirtapError) -> OutputProgress {
        let condition: PCMOutput.Condition
        do {
            condition = try pcm.write(samples)
        } catch {
            throw .localIO(error.description)
        }
        let frames = samples.count / max(1, pcm.channels)
        if keepsTime == nil, frames > 0 {
            // A device that keeps time reports the frames just written as delay.
            keepsTime = pcm.delayFrames() > 0
            if keepsTime == false { emulated = EmulatedPlayhead(sampleRate: pcm.sampleRate) }
        }
        emulated?.wrote(frames, at: clock.now())
        return OutputProgress(frames: frames, recoveredUnderrun: condition == .recoveredUnderrun)
    }

    var delayFrames: Int {
        if let emulated { return emulated.delay(at: clock.now()) }
        return pcm.delayFrames()
    }

    func pause() {
        if emulated != nil { emulated?.pause(at: clock.now()) } else { pcm.pause() }
    }

    func resume() {
        if emulated != nil { emulated?.resume(at: clock.now()) } else { pcm.resume() }
    }

    func recover() throws(AirtapError) {
        guard emulated == nil else { return }
        do {
            _ = try pcm.recoverIfNeeded()
        } catch {
            throw .localIO(error.description)
        }
    }

    func drainStep() -> Int {
        if let emulated { return emulated.delay(at: clock.now()) }
        // Blocks for at most the device's latency; also starts a device that never reached its
        // start threshold (a stream shorter than the latency).
        if pcm.isRunning { pcm.drain() }
        return 0
    }

    func stop() {
        if emulated != nil { emulated?.stop(at: clock.now()) } else { pcm.drop() }
    }
}
