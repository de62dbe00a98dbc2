import AirtapIngest
import AirtapSupport
import AudioDecoding
import Dispatch
import FoundationEssentials
import ICYWire
import Locking
import Logging
import Synchronization

/// How `airtap play` plays.
package struct PlayerConfiguration: Sendable, Hashable {
    /// An ALSA PCM name: `default`, `null`, `hw:0`, `file:'/tmp/x.wav',wav`, …
    package var device: String
    /// Audio queued before playback starts, and again after running dry.
    package var bufferSeconds: Double
    /// 0...100.
    package var volume: Int
    /// Audio handed to the device ahead of the ear: a volume change on a device that cannot
    /// rewind is heard within about this long.
    package var latencySeconds: Double
    /// The queue's bound: past it the oldest audio is dropped for playback.
    package var capacitySeconds: Double

    package init(device: String = "default", bufferSeconds: Double = 1, volume: Int = 100, latencySeconds: Double? = nil) {
        self.device = device
        self.bufferSeconds = max(0, bufferSeconds)
        self.volume = min(100, max(0, volume))
        // The device holds the whole buffer, at most a second: the player writes three quarters
        // of it at each wake-up, and those wake-ups are most of what playing costs (a second
        // wakes it 80 times a minute, half a second 160). A volume change takes back what the
        // device holds where it can rewind; elsewhere it is heard within that second.
        self.latencySeconds = latencySeconds ?? min(1.0, max(0.05, bufferSeconds))
        // Room for the buffer plus a station's burst on connect (often 5-10 s) and a pause of a few seconds.
        self.capacitySeconds = self.bufferSeconds + 15
    }
}

/// Plays a station: packets from the ingest thread go through a bounded queue to the player's
/// own thread, which decodes them with libmpg123 and writes the PCM to ALSA.
///
/// Give `feed` to the station's session as a sink. Everything the player owns in C (decoder,
/// PCM handle) is created and used on its thread only.
package final class Player: Sendable {
    package let configuration: PlayerConfiguration
    /// The sink for the station's session.
    package var feed: any StreamSink { playerFeed }
    private let playerFeed: PlayerFeed
    private let queue: PlaybackQueue
    private let shared = Locked(Shared())
    private let makeOutput: @Sendable () throws(AirtapError) -> any AudioOutput
    private let onChange: @Sendable (PlayerStatus) -> Void
    private let onDevice: @Sendable (PlayerDevice) -> Void
    private let logger: Logger

    private struct Shared {
        var status = PlayerStatus()
        var waiters: [CheckedContinuation<StopReason, Never>] = []
        /// The player's thread has ended and released the device.
        var isFinished = false

        var stopReason: StopReason {
            if case .stopped(let reason) = status.state { return reason }
            return .error(.localIO("the player ended without a reason"))
        }
    }

    /// - Parameters:
    ///   - onChange: called on the player thread whenever the state or the heard title changes.
    ///   - onDevice: called on the player thread at each wake-up with what the device holds and
    ///     whether the station's network loop may rest between reads (`NetworkRest`).
    package convenience init(configuration: PlayerConfiguration, logger: Logger,
                            onChange: @escaping @Sendable (PlayerStatus) -> Void = { _ in },
                            onDevice: @escaping @Sendable (PlayerDevice) -> Void = { _ in }) {
        let device = configuration.device, latency = configuration.latencySeconds
        self.init(configuration: configuration, logger: logger, onChange: onChange,
                  onDevice: onDevice) { () throws(AirtapError) in
            try ALSAAudioOutput(device: device, latencySeconds: latency)
        }
    }

    init(configuration: PlayerConfiguration, logger: Logger,
         onChange: @escaping @Sendable (PlayerStatus) -> Void,
         onDevice: @escaping @Sendable (PlayerDevice) -> Void = { _ in },
         makeOutput: @escaping @Sendable () throws(AirtapError) -> any AudioOutput) {
        self.configuration = configuration
        self.logger = logger
        self.onChange = onChange
        self.onDevice = onDevice
        self.makeOutput = makeOutput
        let queue = PlaybackQueue(capacitySeconds: configuration.capacitySeconds)
        self.queue = queue
        self.playerFeed = PlayerFeed(queue: queue)
        shared.withLock {
            $0.status.bufferTargetSeconds = configuration.bufferSeconds
            $0.status.volume = configuration.volume
        }
    }

    /// Audio waiting in the queue, in seconds (any thread).
    package var queuedSeconds: Double { queue.fill.seconds }

    /// Opens the device on the player's thread and starts it; throws (exit 3) when the device
    /// cannot be opened, before any connection is made.
    package func start() throws(AirtapError) {
        let opened = Locked<Result<Void, AirtapError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = PosixThread { [self] in
            guard run(opened: opened, ready: ready) else { return }
            // Only now, with run's engine and output released, is the device closed (a WAV file
            // complete): waiters may look at it.
            finished()
        }
        thread.name = "airtap.player"
        thread.start()
        ready.wait()
        if case .failure(let error) = opened.withLock({ $0 }) { throw error }
    }

    /// The player's thread: opens the device, reports whether that worked, then plays until
    /// the end. False when the device could not be opened. Everything it created is released
    /// when it returns.
    private func run(opened: Locked<Result<Void, AirtapError>?>, ready: DispatchSemaphore) -> Bool {
        let output: any AudioOutput
        do throws(AirtapError) {
            output = try makeOutput()
        } catch {
            opened.withLock { $0 = .failure(error) }
            ready.signal()
            return false
        }
        opened.withLock { $0 = .success(()) }
        ready.signal()
        let engine = PlayerEngine(configuration: configuration, queue: queue, output: output, logger: logger,
                                  reportDevice: onDevice, publish: { [self] status, changed in publish(status, changed) })
        engine.run()
        return true
    }

    package var status: PlayerStatus { shared.withLock { $0.status } }

    package func togglePause() { queue.send(.togglePause) }
    package func changeVolume(by delta: Int) { queue.send(.changeVolume(by: delta)) }
    /// Sets the gain as a linear amplitude factor (0.5 is about 6 dB down), clamped to 0...1.
    package func setAmplitude(_ amplitude: Double) { queue.send(.setAmplitude(amplitude)) }
    package func setPaused(_ paused: Bool) { queue.send(.setPaused(paused)) }
    /// Another station comes next: what is queued or held by the device is not heard, titles
    /// count from 0 again, and playback starts once the next station's buffer is full. Call it
    /// between two stations' sessions: once one has stopped, before the next starts.
    package func changeStation() {
        playerFeed.restartTitles()
        queue.changeStation()
    }

    /// The listener stopped playback (MPRIS Stop): what is queued or held by the device is not
    /// heard, and the player waits, silent, for `resume`. Call it once the station's session has
    /// stopped.
    package func standBy() {
        playerFeed.restartTitles()
        queue.changeStation()
        queue.send(.standBy)
    }

    /// Play after `standBy`: call it before the station's session starts again.
    package func resume() { queue.send(.resume) }

    /// Stops at once: what is queued is not played.
    package func stop(_ reason: StopReason = .userRequest) { queue.send(.stop(reason)) }

    /// Returns once the player has stopped, with the reason.
    package func stopped() async -> StopReason {
        await withCheckedContinuation { continuation in
            let reason = shared.withLock { shared -> StopReason? in
                if shared.isFinished { return shared.stopReason }
                shared.waiters.append(continuation)
                return nil
            }
            if let reason { continuation.resume(returning: reason) }
        }
    }

    private func publish(_ status: PlayerStatus, _ changed: Bool) {
        shared.withLock { $0.status = status }
        if changed { onChange(status) }
    }

    private func finished() {
        let (reason, waiters) = shared.withLock { shared in
            shared.isFinished = true
            defer { shared.waiters.removeAll() }
            return (shared.stopReason, shared.waiters)
        }
        for waiter in waiters { waiter.resume(returning: reason) }
    }
}

/// The ingest side of the player: events become queue entries. Runs on the ingest thread and
/// only ever appends to the queue (which drops, never blocks).
final class PlayerFeed: StreamSink {
    private let queue: PlaybackQueue
    /// Title changes seen; the ingest thread counts them, `restartTitles` (between stations) resets them.
    private let titleCount = Atomic<Int>(0)

    init(queue: PlaybackQueue) {
        self.queue = queue
    }

    func restartTitles() {
        titleCount.store(0, ordering: .relaxed)
    }

    func receive(_ event: StreamEvent) throws {
        switch event {
        case .packet(let packet):
            queue.push(.packet(packet))
        case .metadata(let change):
            let number = titleCount.add(1, ordering: .relaxed).newValue
            queue.push(.title(change.info, number: number))
        case .discontinuity:
            queue.push(.discontinuity)
        case .connection(let state):
            // Shows while the player waits for audio; wakes the player only when it changes.
            queue.send(.connection(state))
        case .ended(let reason):
            queue.push(.ended(reason))
        case .head, .format:
            // The decoder finds the format in the frames themselves; a codec it cannot open
            // ends the player with that decoder's error.
            break
        }
    }
}
