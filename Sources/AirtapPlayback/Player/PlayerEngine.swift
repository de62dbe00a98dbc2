import AirtapIngest
import AirtapSupport
import AudioDecoding
import DequeModule
import FoundationEssentials
import Glibc
import ICYWire
import Logging

/// The player's thread: takes entries from the queue, decodes them and keeps the device fed.
/// Owns the decoder and the output; never leaves its thread.
///
/// Audio goes to the device as soon as it is decoded, while the device has room; the device is
/// started once `--buffer` is waiting (queued plus written), so the first audio is written as
/// soon as it arrives and the buffer fills inside the device. Between steps the thread sleeps
/// until the next thing it has to do: the device is down to its low water mark (a quarter of its capacity), the
/// device runs dry, a title is heard, an entry arrives while it waits for audio, or a command.
/// It never polls.
final class PlayerEngine {
    let queue: PlaybackQueue
    let output: any AudioOutput
    let logger: Logger
    private let publish: (PlayerStatus, Bool) -> Void
    /// Told at each wake-up what the device holds and whether the network may rest (`NetworkRest`).
    private let reportDevice: (PlayerDevice) -> Void
    /// How the thread sleeps: `PlaybackQueue.wait`, or a test's manual clock.
    private let wait: (_ seconds: Double?, _ forEntriesAfter: Int?) -> Void

    var machine: PlaybackMachine
    /// Made for the first packet's codec, and again when the codec changes (a reconnect to a
    /// fallback URL may bring another).
    var decoder: (any AudioDecoder)?
    var decoderConfiguration: AudioDecoders.Configuration?
    var format: PCMFormat?
    var status = PlayerStatus()
    var gain: Int32 = 1 << 15
    var commands: [PlayerCommand] = []

    /// Decoded samples (volume applied) waiting for room in the device. Allocated once.
    private var staging: [Int16] = []
    var stagingStart = 0
    var stagingEnd = 0
    /// The newest decoded samples as they came from the decoder, before the volume: at most
    /// `recentLimit` of them, ending with those staged. A volume change writes again from here
    /// what the device gives back. Room for the device's capacity and what is staged (one
    /// packet's audio: an Ogg page may hold a second of it), reserved so that keeping samples
    /// never allocates once the limit stops growing.
    var recent = Deque<Int16>()
    private var recentLimit = 0

    /// Totals in frames, across format changes. A title is heard once `framesWritten - delay`
    /// reaches the frame its audio starts at.
    private var framesWritten = 0
    private var secondsWritten: Double = 0
    var pendingTitles: [(frame: Int, info: TrackInfo, number: Int)] = []

    private enum Timing {
        /// The shortest sleep, so a device that reports odd positions cannot make the thread spin.
        static let minimumWait = 0.002
        /// Past the moment the device should have run dry, so it has when the thread looks.
        static let dryMargin = 0.002
        /// Left in the device when a volume change takes back the rest: the audio is written again
        /// right away, and this much covers a scheduler's delay meanwhile.
        static let rewindKeepsSeconds = 0.1
        /// Room in `recent` beyond the device's capacity, before a larger packet grows it: an
        /// MPEG or AAC frame's audio, with room to spare.
        static let recentSpareFrames = 8192
    }

    /// - Parameter wait: how to sleep; nil for the queue's own wait (tests pass a manual clock's).
    init(configuration: PlayerConfiguration, queue: PlaybackQueue, output: any AudioOutput, logger: Logger,
         wait: ((_ seconds: Double?, _ forEntriesAfter: Int?) -> Void)? = nil,
         reportDevice: @escaping (PlayerDevice) -> Void = { _ in },
         publish: @escaping (PlayerStatus, Bool) -> Void) {
        self.reportDevice = reportDevice
        self.queue = queue
        self.output = output
        self.logger = logger
        self.publish = publish
        self.wait = wait ?? { seconds, pushes in queue.wait(seconds: seconds, forEntriesAfter: pushes) }
        machine = PlaybackMachine(bufferSeconds: configuration.bufferSeconds)
        status.bufferTargetSeconds = configuration.bufferSeconds
        setVolume(configuration.volume)
        staging = [Int16](repeating: 0, count: 1 << 16)
        commands.reserveCapacity(8)
        pendingTitles.reserveCapacity(8)
    }

    func run() {
        publishStatus(changed: true)
        while !machine.state.isStopped {
            handleCommands()
            if machine.state.isStopped { break }
            if queue.takeStationChange() { changeStation() }
            if case .paused = machine.state {
                // Only a key ends a pause; the queue drops the oldest audio by itself.
                reportHeldAudio(isPlaying: false)
                wait(nil, nil)
                continue
            }
            // Entries pushed from here on wake the player when it waits for audio.
            let pushes = queue.fill.pushes
            do {
                try feedDevice()
                try advance()
            } catch {
                logger.error("\(error)")
                perform(machine.finish(.error(error)))
                break
            }
            updateHeard()
            publishStatus(changed: false)
            reportHeldAudio(isPlaying: output.isPlaying)
            if machine.state.isStopped { break }
            let wake = nextWake()
            wait(wake.seconds, wake.forEntries ? pushes : nil)
        }
        publishStatus(changed: true)
        reportDevice(PlayerDevice(allowsRest: false, heldSeconds: 0, isPlaying: false))
    }

    /// Applies a volume command; what waits to be heard is restaged only when the gain moved.
    func changeGain(_ change: () -> Void) {
        let before = gain
        change()
        if gain != before { restageAtNewGain() }
        publishStatus(changed: true)
    }

    /// What the device and the staged audio hold, for the network's rest.
    private func reportHeldAudio(isPlaying: Bool) {
        reportDevice(PlayerDevice(allowsRest: machine.allowsNetworkRest,
                                  heldSeconds: Double(output.delayFrames + stagedFrames) / sampleRate,
                                  isPlaying: isPlaying))
    }

    // MARK: Feeding the device

    /// Decodes queued packets and writes them while the device has room. Nothing follows the
    /// stream's end in the queue, so once it was taken this only writes what is staged.
    private func feedDevice() throws(AirtapError) {
        while true {
            if stagingEnd > stagingStart {
                guard try writeStaged() else { return }
                continue
            }
            guard let entry = queue.take() else { return }
            try handle(entry)
        }
    }

    private func handle(_ entry: PlaybackEntry) throws(AirtapError) {
        switch entry {
        case .packet(let packet):
            try decode(packet)
        case .title(let info, let number):
            if status.title == nil, pendingTitles.isEmpty {
                // The first title of a connection names the audio already playing.
                status.title = info
                status.trackNumber = number
                publishStatus(changed: true)
            } else {
                pendingTitles.append((frame: framesWritten + stagedFrames, info: info, number: number))
            }
        case .discontinuity:
            decoder?.reset()
        case .ended(let reason):
            perform(machine.streamEnded(reason))
        }
    }

    private var stagedFrames: Int { (stagingEnd - stagingStart) / max(1, format?.channels ?? 2) }

    private var sampleRate: Double { Double(format?.sampleRate ?? 44100) }

    private func decode(_ packet: Packet) throws(AirtapError) {
        let configuration = AudioDecoders.Configuration(packet.header)
        if decoder == nil || decoderConfiguration != configuration {
            do throws(DecoderError) {
                decoder = try AudioDecoders.make(for: packet.header.codec)
                decoderConfiguration = configuration
            } catch {
                switch error.kind {
                case .unavailable: throw .localIO(error.description)
                case .malformed, .unsupported: throw .stream(url: "", reason: error.description)
                }
            }
        }
        guard let decoder else { return }
        if let bitrate = packet.header.bitrate { status.bitrate = bitrate / 1000 }
        stagingStart = 0
        stagingEnd = 0
        var failure: AirtapError?
        var decoderError: DecoderError?
        packet.bytes.withUnsafeBytes { raw in
            do throws(DecoderError) {
                try decoder.decode(raw) { format, samples in
                    do throws(AirtapError) {
                        try stage(samples, format: format)
                    } catch {
                        failure = error
                    }
                }
            } catch {
                decoderError = error
            }
        }
        if let decoderError {
            // A stream the decoder cannot resync on: start it afresh; the next frames play.
            logger.warning("\(decoderError); restarting the decoder")
            decoder.reset()
        }
        if let failure { throw failure }
    }

    /// Appends decoded samples, scaled by the volume. A new format first plays out the old one.
    private func stage(_ samples: UnsafeBufferPointer<Int16>, format next: PCMFormat) throws(AirtapError) {
        if next != format {
            try playOutBeforeFormatChange()
            try output.configure(sampleRate: next.sampleRate, channels: next.channels)
            if let format { logger.notice("format changed: \(format.sampleRate) Hz → \(next.sampleRate) Hz, \(next.channels) channels") }
            format = next
            status.sampleRate = next.sampleRate
            status.channels = next.channels
            recent.removeAll(keepingCapacity: true)
        }
        // What the device holds and everything staged must fit: grown (rarely) before it is
        // overwritten.
        reserveRecent((output.capacityFrames + Timing.recentSpareFrames) * next.channels + stagingEnd + samples.count)
        remember(samples)
        if stagingEnd + samples.count > staging.count {
            staging.append(contentsOf: repeatElement(0, count: stagingEnd + samples.count - staging.count))
        }
        let gain = gain
        staging.withUnsafeMutableBufferPointer { buffer in
            guard let source = samples.baseAddress, let target = buffer.baseAddress?.advanced(by: stagingEnd) else { return }
            if gain == 1 << 15 {
                target.update(from: source, count: samples.count)
            } else {
                for index in 0..<samples.count {
                    target[index] = Int16(truncatingIfNeeded: (Int32(source[index]) * gain) >> 15)
                }
            }
        }
        stagingEnd += samples.count
    }

    /// Lets the ring hold `count` samples, its contents kept in order.
    private func reserveRecent(_ count: Int) {
        guard recentLimit < count else { return }
        recentLimit = count
        recent.reserveCapacity(count)
    }

    /// Keeps the decoder's samples (before the volume) in the ring, the oldest dropped first.
    private func remember(_ samples: UnsafeBufferPointer<Int16>) {
        guard recentLimit > 0, !samples.isEmpty else { return }
        let kept = samples.count > recentLimit ? UnsafeBufferPointer(rebasing: samples.suffix(recentLimit)) : samples
        let overflow = recent.count + kept.count - recentLimit
        if overflow > 0 { recent.removeFirst(overflow) }
        recent.append(contentsOf: kept)
    }

    /// A new volume is heard at once: the device gives back what it holds beyond a moment's
    /// worth (where it can), and that and what is staged are staged again from the decoder's
    /// samples at the new gain, to be written next.
    private func restageAtNewGain() {
        guard let format, !recent.isEmpty else { return }
        let channels = format.channels
        let staged = stagingEnd - stagingStart
        var rewound = 0
        if case .playing = machine.state {
            let keep = Int(Timing.rewindKeepsSeconds * sampleRate)
            let wanted = min(output.delayFrames - keep, (recent.count - staged) / channels)
            if wanted > 0 { rewound = output.rewind(frames: wanted, keeping: keep) }
        }
        let count = staged + rewound * channels
        guard count > 0, count <= recent.count else { return }
        if count > staging.count { staging.append(contentsOf: repeatElement(0, count: count - staging.count)) }
        let gain = gain
        let start = recent.count - count
        staging.withUnsafeMutableBufferPointer { target in
            for index in 0..<count {
                target[index] = Int16(truncatingIfNeeded: (Int32(recent[start + index]) * gain) >> 15)
            }
        }
        stagingStart = 0
        stagingEnd = count
        framesWritten -= rewound
        secondsWritten -= Double(rewound) / Double(format.sampleRate)
    }

    /// Writes as much of the staged audio as the device takes now. True once all of it is written.
    private func writeStaged() throws(AirtapError) -> Bool {
        guard let format else {
            stagingStart = stagingEnd
            return true
        }
        let room = try output.writableFrames()
        if room.recoveredUnderrun { perform(machine.ranDry()) }
        let frames = min(room.frames, stagedFrames)
        if frames > 0 {
            let count = frames * format.channels
            let written = try staging.withUnsafeBufferPointer { buffer throws(AirtapError) in
                try output.write(UnsafeBufferPointer(rebasing: buffer[stagingStart..<stagingStart + count]))
            }
            if written.recoveredUnderrun { perform(machine.ranDry()) }
            stagingStart += count
            framesWritten += frames
            secondsWritten += Double(frames) / Double(format.sampleRate)
        }
        return stagingEnd == stagingStart
    }

    /// Before a format change: what was decoded at the old format is written and heard first.
    /// Rare (a station changing its rate), so it simply sleeps for the device here.
    private func playOutBeforeFormatChange() throws(AirtapError) {
        guard format != nil else { return }
        while !machine.state.isStopped {
            let done = try writeStaged()
            if !output.isPlaying { try output.start() }
            output.drain()
            let left = output.delayFrames
            if done, left == 0 { break }
            let seconds = done ? Double(left) / sampleRate : Double(max(1, output.capacityFrames / 2)) / sampleRate
            wait(max(Timing.minimumWait, seconds), nil)
            handleCommands()
            updateHeard()
        }
        stagingStart = 0
        stagingEnd = 0
    }

    // MARK: The machine's view

    /// Tells the machine what the player sees and performs what it decides: starting the
    /// device, noticing one that ran dry, playing out the end and ending.
    private func advance() throws(AirtapError) {
        // Titles heard by now go out before a state the machine moves to (the end among them).
        updateHeard()
        let action = machine.step(observe())
        try apply(action)
        if action == .drain, !output.isPlaying {
            // A device that keeps time has played everything out inside drain(): end now, before
            // a key pressed meanwhile could pause a device that has nothing left.
            updateHeard()
            try apply(machine.step(observe()))
        }
    }

    private func observe() -> PlaybackMachine.Observation {
        let fill = queue.fill
        let delay = output.delayFrames
        return PlaybackMachine.Observation(
            waitingSeconds: fill.seconds + Double(delay + stagedFrames) / sampleRate,
            stagedFrames: stagedFrames, delayFrames: delay, deviceIsPlaying: output.isPlaying,
            queueIsEmpty: fill.isEmpty, queueIsComplete: fill.complete)
    }

    /// When to look again, and whether a new entry in the queue is a reason to.
    ///
    /// While the device holds more than its low water mark there is nothing urgent: the player
    /// sleeps until it is down to that, then writes what arrived meanwhile in one go (a few
    /// wake-ups a second, however the station's packets trickle in). Below it, new audio is
    /// written as it arrives, and the player looks again when the device would run dry.
    private func nextWake() -> (seconds: Double?, forEntries: Bool) {
        let draining: Bool
        switch machine.state {
        case .playing where output.isPlaying: draining = false
        case .draining: draining = true
        default:
            // Waiting for the buffer to fill: every new entry counts (and moves the percentage).
            return (nil, true)
        }
        let rate = sampleRate
        var seconds: Double?
        func soonest(_ candidate: Double) { seconds = min(seconds ?? candidate, max(Timing.minimumWait, candidate)) }
        let delay = output.delayFrames
        let low = lowWaterFrames
        let forEntries: Bool
        if delay > low {
            soonest(Double(delay - low) / rate)
            forEntries = false
        } else {
            soonest(Double(delay) / rate + Timing.dryMargin)
            forEntries = !draining && stagedFrames == 0 && queue.fill.isEmpty
        }
        if let title = pendingTitles.first {
            soonest(Double(title.frame - (framesWritten - delay)) / rate)
        }
        return (seconds, forEntries)
    }

    /// The device is written again when it is down to this: a quarter of its capacity, at least
    /// 60 ms of audio (a scheduler's worst ordinary delay, with room to spare), at most half.
    /// Every wake-up the player saves is most of what it costs: at a quarter it writes
    /// three quarters of the device at once, where half wrote half.
    private var lowWaterFrames: Int {
        let capacity = output.capacityFrames
        return min(capacity / 2, max(capacity / 4, Int(0.06 * sampleRate)))
    }

    // MARK: Titles and status

    private func updateHeard() {
        let heard = max(0, framesWritten - output.delayFrames)
        var changed = false
        while let first = pendingTitles.first, first.frame <= heard {
            pendingTitles.removeFirst()
            status.title = first.info
            status.trackNumber = first.number
            changed = true
        }
        if changed { publishStatus(changed: true) }
    }

    func publishStatus(changed: Bool) {
        let fill = queue.fill
        let delay = output.delayFrames
        status.framesWritten = framesWritten
        status.framesHeard = max(0, framesWritten - delay)
        status.state = machine.state
        status.underruns = machine.underruns
        status.bufferedSeconds = fill.seconds + Double(delay + stagedFrames) / sampleRate
        status.droppedPackets = fill.dropped
        status.heardSeconds = max(0, secondsWritten - Double(delay) / sampleRate)
        publish(status, changed)
    }
}
