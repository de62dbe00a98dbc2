import ALSAPlayback
import AirtapSupport
import Dispatch

/// Where the player's PCM goes: ALSA for listeners; tests may put anything behind it.
/// Created and used on the player thread only (C handles are not thread-safe).
///
/// Writing never starts playback: the player writes audio as soon as it is decoded and calls
/// `start()` once its buffer is full, so what waits for the buffer already sits in the device.
/// A device that runs dry stops (an xrun) and holds what is written next until `start()`.
protocol AudioOutput: AnyObject {
    /// Sets the format; called before the first write and whenever the stream's format changes.
    func configure(sampleRate: Int, channels: Int) throws(AirtapError)
    /// Frames that can be written now without blocking; notices a device that ran dry.
    func writableFrames() throws(AirtapError) -> OutputProgress
    /// Writes interleaved samples (at most `writableFrames()` frames).
    func write(_ samples: UnsafeBufferPointer<Int16>) throws(AirtapError) -> OutputProgress
    /// Takes back up to `frames` of the newest frames written and not yet heard, leaving at
    /// least `keeping` in the device, where it can (a sound card or dmix); returns how many (at
    /// most `frames`). They are written again next, so a volume change is heard at once instead
    /// of after what the device holds.
    func rewind(frames: Int, keeping: Int) -> Int
    /// Frames written but not yet heard.
    var delayFrames: Int { get }
    /// The most the device holds ahead of the ear, in frames of the current format.
    var capacityFrames: Int { get }
    /// Playing what was written: started, not paused, not run dry.
    var isPlaying: Bool { get }
    /// Starts playing what was written (nothing to do when already playing).
    func start() throws(AirtapError)
    func pause()
    func resume()
    /// After the player ran dry and waited for its buffer: make the device startable again.
    func recover() throws(AirtapError)
    /// Lets the device play out what it holds, with nothing more to come: a device that keeps
    /// time is drained (blocking for at most its latency); a paced one plays out by its clock,
    /// and `delayFrames` says when it has.
    func drain()
    /// Discards what the device holds.
    func stop()
    /// Discards what the device holds and makes it ready for other audio (another station):
    /// what is written next waits for `start()`.
    func discard()
}

/// What the device said while being written to.
struct OutputProgress {
    var frames: Int
    /// The device had run dry (an xrun) and was recovered on the way: it holds what is written
    /// until started again.
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
/// mpv's null output, airtap plays into them in real time: once started, frames count as heard
/// as the clock advances; when the clock catches up with what was written the device has run
/// dry and, like a real one after an xrun, holds what is written next until started again.
struct EmulatedPlayhead {
    private(set) var sampleRate: Int
    /// Frames written, in total.
    private(set) var written = 0
    /// Playing since (clock, frames heard then); nil while not started, paused or dry.
    private var anchor: (time: Double, frames: Int)?
    private var heldFrames = 0
    private var pausedWhilePlaying = false

    init(sampleRate: Int) {
        self.sampleRate = sampleRate
    }

    func heard(at now: Double) -> Int {
        guard let anchor else { return heldFrames }
        return min(written, anchor.frames + Int((now - anchor.time) * Double(sampleRate)))
    }

    func delay(at now: Double) -> Int { written - heard(at: now) }

    func isPlaying(at now: Double) -> Bool { anchor != nil && heard(at: now) < written }

    /// True once when the playhead has caught up with what was written since it started: it
    /// stops there, as a device stops on an xrun.
    mutating func ranDry(at now: Double) -> Bool {
        guard anchor != nil, heard(at: now) >= written else { return false }
        heldFrames = written
        anchor = nil
        return true
    }

    /// Records a write; it is heard once started (at once when playing). True when the playhead
    /// had run dry before it: the frames wait for the next start.
    @discardableResult
    mutating func wrote(_ frames: Int, at now: Double) -> Bool {
        let dry = ranDry(at: now)
        written += frames
        return dry
    }

    mutating func start(at now: Double) {
        guard anchor == nil, written > heldFrames else { return }
        anchor = (now, heldFrames)
    }

    mutating func pause(at now: Double) {
        pausedWhilePlaying = isPlaying(at: now)
        heldFrames = heard(at: now)
        anchor = nil
    }

    mutating func resume(at now: Double) {
        if pausedWhilePlaying { start(at: now) }
        pausedWhilePlaying = false
    }

    /// Takes back up to `frames` of the newest frames not heard yet, as a device that can rewind
    /// does; returns how many.
    mutating func rewind(_ frames: Int, at now: Double) -> Int {
        let taken = max(0, min(frames, delay(at: now)))
        written -= taken
        return taken
    }

    /// Drops what was not heard yet.
    mutating func stop(at now: Double) {
        heldFrames = heard(at: now)
        written = heldFrames
        anchor = nil
    }
}

/// ALSA playback. Devices that keep time are written as far as `snd_pcm_avail` allows; devices
/// that do not (their delay stays 0 once started) are paced by an `EmulatedPlayhead`.
///
/// Which kind a device is shows only once it plays, so until its first start every device is
/// counted like a paced one (nothing heard, at most one latency's worth written).
final class ALSAAudioOutput: AudioOutput {
    /// Whose clock says what was heard.
    private enum Timekeeping {
        /// Not started yet: frames are counted as a paced device counts them, and the device's
        /// own room limits writes too.
        case undecided(EmulatedPlayhead)
        /// The device keeps time: its delay and state are the truth.
        case device
        /// The device takes any amount at once (`null`, `file:`): played in real time by the clock.
        case paced(EmulatedPlayhead)
    }

    private let pcm: PCMOutput
    private let latencySeconds: Double
    private let clock: any PlaybackClock
    private var timekeeping = Timekeeping.undecided(EmulatedPlayhead(sampleRate: 44100))
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

    /// The playhead counting frames, unless the device keeps time.
    private var playhead: EmulatedPlayhead? {
        switch timekeeping {
        case .undecided(let playhead), .paced(let playhead): playhead
        case .device: nil
        }
    }

    /// Changes the playhead in place; nil (and nothing done) for a device that keeps time.
    @discardableResult
    private func updatePlayhead<Result>(_ change: (inout EmulatedPlayhead) -> Result) -> Result? {
        switch timekeeping {
        case .undecided(var playhead):
            defer { timekeeping = .undecided(playhead) }
            return change(&playhead)
        case .paced(var playhead):
            defer { timekeeping = .paced(playhead) }
            return change(&playhead)
        case .device:
            return nil
        }
    }

    func configure(sampleRate: Int, channels: Int) throws(AirtapError) {
        do {
            try pcm.configure(sampleRate: sampleRate, channels: channels, latencySeconds: latencySeconds)
        } catch {
            throw .localIO(error.description)
        }
        latencyFrames = max(1, Int(latencySeconds * Double(sampleRate)))
        if pcm.bufferFrames > 0 { latencyFrames = min(latencyFrames, pcm.bufferFrames) }
        switch timekeeping {
        case .undecided: timekeeping = .undecided(EmulatedPlayhead(sampleRate: sampleRate))
        case .paced: timekeeping = .paced(EmulatedPlayhead(sampleRate: sampleRate))
        case .device: break
        }
    }

    var capacityFrames: Int { latencyFrames }

    func writableFrames() throws(AirtapError) -> OutputProgress {
        guard playhead != nil else {
            let (frames, condition) = try available()
            return OutputProgress(frames: frames, recoveredUnderrun: condition == .recoveredUnderrun)
        }
        let now = clock.now()
        let dry = updatePlayhead { $0.ranDry(at: now) } ?? false
        let room = max(0, latencyFrames - (playhead?.delay(at: now) ?? 0))
        if case .undecided = timekeeping {
            let (frames, _) = try available()
            return OutputProgress(frames: min(room, frames), recoveredUnderrun: dry)
        }
        return OutputProgress(frames: room, recoveredUnderrun: dry)
    }

    private func available() throws(AirtapError) -> (Int, PCMOutput.Condition) {
        do {
            return try pcm.availableFrames()
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
        let now = clock.now()
        let dry = updatePlayhead { $0.wrote(frames, at: now) } ?? false
        return OutputProgress(frames: frames, recoveredUnderrun: dry || condition == .recoveredUnderrun)
    }

    /// Only a device that keeps time: what a paced one (`file:`) was given is already out.
    func rewind(frames: Int, keeping: Int) -> Int {
        guard case .device = timekeeping, pcm.isPlaying else { return 0 }
        return pcm.rewind(frames: frames, keeping: keeping)
    }

    var delayFrames: Int {
        if let playhead { return playhead.delay(at: clock.now()) }
        return pcm.delayFrames()
    }

    var isPlaying: Bool {
        if let playhead { return playhead.isPlaying(at: clock.now()) }
        return pcm.isPlaying
    }

    func start() throws(AirtapError) {
        pcm.start()
        if case .undecided(let playhead) = timekeeping, playhead.written > 0 {
            // A device that keeps time reports the frames it holds as delay once it runs.
            timekeeping = pcm.delayFrames() > 0 ? .device : .paced(playhead)
        }
        let now = clock.now()
        updatePlayhead { $0.start(at: now) }
    }

    func pause() {
        let now = clock.now()
        if updatePlayhead({ $0.pause(at: now) }) == nil { pcm.pause() }
    }

    func resume() {
        let now = clock.now()
        if updatePlayhead({ $0.resume(at: now) }) == nil { pcm.resume() }
    }

    func recover() throws(AirtapError) {
        guard case .device = timekeeping else { return }
        do {
            _ = try pcm.recoverIfNeeded()
        } catch {
            throw .localIO(error.description)
        }
    }

    func drain() {
        // Also starts a device that was never started. A paced device's clock plays it out.
        if case .device = timekeeping, pcm.isRunning { pcm.drain() }
    }

    func stop() {
        let now = clock.now()
        if updatePlayhead({ $0.stop(at: now) }) == nil { pcm.drop() }
    }

    func discard() {
        let now = clock.now()
        updatePlayhead { $0.stop(at: now) }
        // Always the device too: one not started yet (still undecided) holds what was written,
        // and the next configure would play it out.
        pcm.dropAndPrepare()
    }
}
