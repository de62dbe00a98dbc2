import FoundationEssentials
import ICYWire
import Logging
import MPG123Decoding

/// The player's thread: takes entries from the queue, decodes them and keeps the device fed.
/// Owns the decoder and the output; never leaves its thread.
final class PlayerEngine {
    private let queue: PlaybackQueue
    private let output: any AudioOutput
    private let logger: Logger
    private let connection: @Sendable () -> ConnectionState
    private let publish: (PlayerStatus, Bool) -> Void
    private let clock = SystemPlaybackClock()

    private var machine: PlaybackMachine
    private var decoder: MP3Decoder?
    private var format: MP3Decoder.Format?
    private var status = PlayerStatus()
    private var gain: Int32 = 1 << 15
    private var commands: [PlayerCommand] = []

    /// Decoded samples (volume applied) waiting for room in the device. Allocated once.
    private var staging: [Int16] = []
    private var stagingStart = 0
    private var stagingEnd = 0

    /// Totals in frames, across format changes. A title is heard once `framesWritten - delay`
    /// reaches the frame its audio starts at.
    private var framesWritten = 0
    private var secondsWritten: Double = 0
    private var pendingTitles: [(frame: Int, info: TrackInfo, number: Int)] = []
    private var lastConnectionPoll: Double = 0
    private var lastPublish: Double = 0

    private enum Timing {
        /// Below this much audio left in the device with nothing queued, the player has run dry.
        static let drySeconds = 0.03
        static let idleWait = 0.05
    }

    init(configuration: PlayerConfiguration, queue: PlaybackQueue, output: any AudioOutput, logger: Logger,
         connection: @escaping @Sendable () -> ConnectionState, publish: @escaping (PlayerStatus, Bool) -> Void) {
        self.queue = queue
        self.output = output
        self.logger = logger
        self.connection = connection
        self.publish = publish
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
            pollConnection()
            switch machine.state {
            case .stopped:
                break
            case .paused:
                queue.wait(seconds: 0.1)
            case .connecting, .buffering, .reconnecting:
                let fill = queue.fill
                let action = machine.queued(seconds: fill.seconds, complete: fill.complete)
                if case .none = action { queue.wait(seconds: Timing.idleWait) } else { perform(action) }
            case .playing:
                playStep()
            }
            updateHeard()
            let now = clock.now()
            if now - lastPublish > 0.1 { publishStatus(changed: false) }
        }
        publishStatus(changed: true)
    }

    // MARK: Playing

    /// One step of playback: write what the device takes, or decode the next packet, or notice
    /// that the queue ran dry.
    private func playStep() {
        do {
            if stagingEnd > stagingStart {
                try writeStaged()
                return
            }
            guard let entry = queue.take() else {
                let rate = Double(format?.sampleRate ?? 44100)
                if Double(output.delayFrames) > Timing.drySeconds * rate {
                    queue.wait(seconds: 0.01)
                } else {
                    perform(machine.ranDry())
                }
                return
            }
            try handle(entry)
        } catch {
            logger.error("\(error)")
            output.stop()
            perform(machine.finish(.error(error)))
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
            try drain()
            perform(machine.finish(reason))
        }
    }

    private var stagedFrames: Int { (stagingEnd - stagingStart) / max(1, format?.channels ?? 2) }

    private func decode(_ packet: Packet) throws(AirtapError) {
        if decoder == nil {
            do { decoder = try MP3Decoder() } catch { throw .localIO(error.description) }
        }
        guard let decoder else { return }
        if let bitrate = packet.header.bitrate { status.bitrate = bitrate / 1000 }
        stagingStart = 0
        stagingEnd = 0
        var failure: AirtapError?
        var decoderError: MP3Decoder.DecoderError?
        packet.bytes.withUnsafeBytes { raw in
            do throws(MP3Decoder.DecoderError) {
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
    private func stage(_ samples: UnsafeBufferPointer<Int16>, format next: MP3Decoder.Format) throws(AirtapError) {
        if next != format {
            try writeAllStaged()
            try output.configure(sampleRate: next.sampleRate, channels: next.channels)
            if let format { logger.notice("format changed: \(format.sampleRate) Hz → \(next.sampleRate) Hz, \(next.channels) channels") }
            format = next
            status.sampleRate = next.sampleRate
            status.channels = next.channels
        }
        if stagingEnd + samples.count > staging.count {
            staging.append(contentsOf: repeatElement(0, count: stagingEnd + samples.count - staging.count))
        }
        let gain = gain
        staging.withUnsafeMutableBufferPointer { buffer in
            var index = stagingEnd
            if gain == 1 << 15 {
                for sample in samples {
                    buffer[index] = sample
                    index += 1
                }
            } else {
                for sample in samples {
                    buffer[index] = Int16(truncatingIfNeeded: (Int32(sample) * gain) >> 15)
                    index += 1
                }
            }
        }
        stagingEnd += samples.count
    }

    /// Writes as much of the staged audio as the device takes now; waits briefly when it takes none.
    private func writeStaged() throws(AirtapError) {
        guard let format else {
            stagingStart = stagingEnd
            return
        }
        let progress = try output.writableFrames()
        if progress.recoveredUnderrun { machine.deviceUnderrun() }
        let frames = min(progress.frames, stagedFrames)
        guard frames > 0 else {
            let missing = min(stagedFrames, 1024)
            queue.wait(seconds: min(0.05, max(0.002, Double(missing) / Double(format.sampleRate))))
            return
        }
        let count = frames * format.channels
        let written = try staging.withUnsafeBufferPointer { buffer throws(AirtapError) in
            try output.write(UnsafeBufferPointer(rebasing: buffer[stagingStart..<stagingStart + count]))
        }
        if written.recoveredUnderrun { machine.deviceUnderrun() }
        stagingStart += count
        framesWritten += frames
        secondsWritten += Double(frames) / Double(format.sampleRate)
    }

    /// Before a format change: everything staged goes out at the old format.
    private func writeAllStaged() throws(AirtapError) {
        while stagingEnd > stagingStart, !machine.state.isStopped {
            try writeStaged()
        }
        stagingStart = 0
        stagingEnd = 0
    }

    /// The end of the stream: everything queued is heard, then the player stops. Keys still work.
    private func drain() throws(AirtapError) {
        try writeAllStaged()
        while output.drainStep() > 0 {
            handleCommands()
            if machine.state.isStopped { return }
            updateHeard()
            queue.wait(seconds: 0.02)
        }
        updateHeard()
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
        status.framesWritten = framesWritten
        status.framesHeard = heard
        if changed { publishStatus(changed: true) }
    }

    private func publishStatus(changed: Bool) {
        let fill = queue.fill
        status.state = machine.state
        status.underruns = machine.underruns
        status.bufferedSeconds = fill.seconds
        status.droppedPackets = fill.dropped
        let rate = Double(format?.sampleRate ?? 44100)
        status.heardSeconds = max(0, secondsWritten - Double(output.delayFrames) / rate)
        lastPublish = clock.now()
        publish(status, changed)
    }

    // MARK: Commands and actions

    private func handleCommands() {
        queue.takeCommands(into: &commands)
        for command in commands {
            switch command {
            case .togglePause:
                perform(machine.togglePause())
            case .changeVolume(let delta):
                setVolume(status.volume + delta)
                publishStatus(changed: true)
            case .stop(let reason):
                output.stop()
                perform(machine.finish(reason))
            }
        }
    }

    private func pollConnection() {
        let now = clock.now()
        guard now - lastConnectionPoll > 0.1 else { return }
        lastConnectionPoll = now
        perform(machine.connection(connection()))
    }

    private func perform(_ action: PlaybackMachine.Action) {
        let before = status.state
        switch action {
        case .none, .play, .stop:
            break
        case .recoverAndPlay:
            do {
                try output.recover()
            } catch {
                logger.error("\(error)")
                perform(machine.finish(.error(error)))
                return
            }
        case .pauseDevice:
            output.pause()
        case .resumeDevice:
            output.resume()
        }
        if machine.state != before { publishStatus(changed: true) }
    }

    /// Software gain, cubic like mpv's volume curve: 50 sounds about half as loud.
    private func setVolume(_ volume: Int) {
        let clamped = min(100, max(0, volume))
        status.volume = clamped
        let scale = Double(clamped) / 100
        gain = Int32((scale * scale * scale * Double(1 << 15)).rounded())
    }
}
