@testable import AirtapKit
@testable import AirtapPlayback
@testable import AirtapSupport
import AirtapTestSupport
import ICYWire
import Logging
import Synchronization
import TestStation
import Testing

/// A clock the test moves: the engine's sleeps advance it instead of passing real time.
final class ManualClock: PlaybackClock {
    /// Where every manual clock starts.
    static let start = 1000.0
    private let seconds = Mutex<Double>(ManualClock.start)
    func now() -> Double { seconds.withLock { $0 } }
    func advance(by delta: Double) { seconds.withLock { $0 += delta } }
}

/// A paced device on a manual clock, as ALSA's `null` plugin is paced by airtap: it holds up to
/// its capacity ahead of the ear, plays in (manual) real time and, when it runs out, holds what
/// is written next until started again. Says what it was asked to do.
final class FakeOutput: AudioOutput {
    private let clock: ManualClock
    private let capacitySeconds: Double
    private var playhead = EmulatedPlayhead(sampleRate: 44100)
    private var channels = 2
    private(set) var calls: [String] = []
    /// Like a sound card: drain() blocks until all of it was heard (the clock moves on).
    var drainsLikeACard = false
    /// Runs inside drain(), as a key pressed while it blocks would arrive.
    var duringDrain: (() -> Void)?
    /// Gives frames back on `rewind`, as a sound card does (a paced device cannot).
    var rewinds = false
    /// Every sample at its place in the output, a rewound one overwritten by what came again.
    private(set) var samples: [Int16] = []

    init(clock: ManualClock, capacitySeconds: Double) {
        self.clock = clock
        self.capacitySeconds = capacitySeconds
    }

    var framesWritten: Int { playhead.written }
    var framesHeard: Int { playhead.heard(at: clock.now()) }

    func configure(sampleRate: Int, channels: Int) throws(AirtapError) {
        calls.append("configure \(sampleRate) Hz × \(channels)")
        playhead = EmulatedPlayhead(sampleRate: sampleRate)
        self.channels = channels
    }

    var capacityFrames: Int { Int(capacitySeconds * Double(playhead.sampleRate)) }

    func writableFrames() throws(AirtapError) -> OutputProgress {
        let now = clock.now()
        let dry = playhead.ranDry(at: now)
        return OutputProgress(frames: max(0, capacityFrames - playhead.delay(at: now)), recoveredUnderrun: dry)
    }

    func write(_ samples: UnsafeBufferPointer<Int16>) throws(AirtapError) -> OutputProgress {
        self.samples.removeSubrange(min(self.samples.count, playhead.written * channels)...)
        self.samples.append(contentsOf: samples)
        let dry = playhead.wrote(samples.count / channels, at: clock.now())
        return OutputProgress(frames: samples.count / channels, recoveredUnderrun: dry)
    }

    func rewind(frames: Int, keeping: Int) -> Int {
        guard rewinds, isPlaying else { return 0 }
        calls.append("rewind")
        return playhead.rewind(min(frames, delayFrames - keeping), at: clock.now())
    }

    var delayFrames: Int { playhead.delay(at: clock.now()) }
    var isPlaying: Bool { playhead.isPlaying(at: clock.now()) }

    func start() throws(AirtapError) {
        if calls.last != "start" { calls.append("start") }
        playhead.start(at: clock.now())
    }

    func pause() { calls.append("pause"); playhead.pause(at: clock.now()) }
    func resume() { calls.append("resume"); playhead.resume(at: clock.now()) }
    func recover() throws(AirtapError) { calls.append("recover") }
    func drain() {
        if calls.last != "drain" { calls.append("drain") }
        guard drainsLikeACard else { return }
        duringDrain?()
        clock.advance(by: Double(playhead.delay(at: clock.now())) / Double(playhead.sampleRate) + 0.001)
    }
    func stop() { calls.append("stop"); playhead.stop(at: clock.now()) }
    func discard() { calls.append("discard"); playhead.stop(at: clock.now()) }
}

/// `PlayerEngine` with a fake output and a manual clock: the real engine, queue, machine and
/// mpg123 decoder, no real time, no device, no socket. A run takes milliseconds.
@Suite("Player engine (Play)")
struct PlayerEngineTests {
    static let program = PlayTests.program
    static let seconds = 4.5

    /// The station's first `seconds` as queue entries: a title before each track's first packet.
    static func entries() -> [PlaybackEntry] {
        let count = program.frameIndex(atOrAfter: program.audioByteCount(from: 0, seconds: seconds))
        let starts = Dictionary(uniqueKeysWithValues: program.tracks.enumerated().map {
            (program.frameIndex(atOrAfter: $0.element.startOffset), $0.offset)
        })
        var entries: [PlaybackEntry] = []
        for (index, packet) in program.packets(count: count).enumerated() {
            if let track = starts[index] {
                entries.append(.title(TrackInfo(streamTitle: program.tracks[track].title), number: track + 1))
            }
            entries.append(.packet(packet))
        }
        return entries
    }

    static var totalFrames: Int {
        entries().filter { if case .packet = $0 { true } else { false } }.count * program.samplesPerFrame
    }

    /// What a run saw.
    final class Run {
        let clock = ManualClock()
        let output: FakeOutput
        let queue = PlaybackQueue(capacitySeconds: 30)
        var statuses: [PlayerStatus] = []
        /// The engine waited for entries that nothing was going to push.
        var stuck = false
        var waits = 0

        init(latencySeconds: Double) {
            output = FakeOutput(clock: clock, capacitySeconds: latencySeconds)
        }

        var states: [PlayerState] {
            statuses.map(\.state).reduce(into: []) { states, state in if states.last != state { states.append(state) } }
        }
        var last: PlayerStatus { statuses.last ?? PlayerStatus() }
    }

    /// Runs the engine until it stops. `script` sees the run at every sleep and may push entries
    /// or send commands (true: it did, so the engine wakes at once, as the real queue wakes it);
    /// otherwise the sleep moves the clock.
    static func run(bufferSeconds: Double, entries: [PlaybackEntry],
                    script: @escaping (Run, _ sleep: Double?) -> Bool = { _, _ in false },
                    prepare: (Run) -> Void = { _ in }) -> Run {
        let configuration = PlayerConfiguration(device: "fake", bufferSeconds: bufferSeconds)
        let run = Run(latencySeconds: configuration.latencySeconds)
        prepare(run)
        for entry in entries { run.queue.push(entry) }
        let engine = PlayerEngine(
            configuration: configuration, queue: run.queue, output: run.output, logger: Logger(label: "test"),
            wait: { seconds, _ in
                run.waits += 1
                if script(run, seconds) { return }
                if run.waits > 100_000 || (seconds == nil && run.last.state != .paused) {
                    // Spinning, or waiting for entries nothing will push: end the run rather
                    // than hang the test. (Paused, the script sends the key.)
                    run.stuck = true
                    run.queue.send(.stop(.userRequest))
                } else if let seconds {
                    run.clock.advance(by: seconds)
                }
            },
            publish: { status, _ in run.statuses.append(status) })
        engine.run()
        return run
    }

    @Test("A whole stream: every frame heard once, in real time by the clock, titles as their audio is heard, then played out and ended")
    func playsOut() throws {
        let entries = Self.entries() + [.ended(.endOfStream)]
        let started = ManualClock.start
        let run = Self.run(bufferSeconds: 1, entries: entries)
        #expect(!run.stuck)
        #expect(run.last.state == .stopped(.endOfStream))
        #expect(run.output.framesWritten == Self.totalFrames)
        #expect(run.output.framesHeard == Self.totalFrames)
        #expect(run.last.underruns == 0)
        #expect(run.states.contains(.playing))
        #expect(run.states.suffix(2) == [.draining(.endOfStream), .stopped(.endOfStream)], "\(run.states)")
        // Nothing is discarded at the end; the device is told to play out.
        #expect(run.output.calls.contains("drain"))
        #expect(!run.output.calls.contains("stop"))
        // Real time: the audio's length, and not much more (the buffer fills at once here).
        let elapsed = run.clock.now() - started
        let audioSeconds = Double(Self.totalFrames) / 44100
        #expect(elapsed >= audioSeconds && elapsed < audioSeconds + 0.1, "\(elapsed) s for \(audioSeconds) s of audio")
        for (index, track) in Self.program.tracks.enumerated().dropFirst() {
            let frame = Self.program.frameIndex(atOrAfter: track.startOffset) * Self.program.samplesPerFrame
            guard frame < Self.totalFrames else { continue }
            let shown = try #require(run.statuses.first { $0.trackNumber == index + 1 }, "track \(index + 1) never shown")
            #expect(shown.title?.raw == track.title)
            #expect(shown.framesHeard >= frame && shown.framesHeard < frame + 2205,
                    "\(track.title): shown at \(shown.framesHeard), its audio starts at \(frame)")
        }
    }

    @Test("Another station: what the device held is discarded, titles count from 1 again, and the next station plays whole after a full buffer")
    func changeStation() throws {
        let all = Self.entries()
        var heardAtChange: Int?
        var stateAtChange: PlayerState?
        let run = Self.run(bufferSeconds: 1, entries: Array(all.prefix(all.count / 2)), script: { run, _ in
            guard heardAtChange == nil, run.clock.now() - ManualClock.start > 1.5 else { return false }
            heardAtChange = run.output.framesHeard
            stateAtChange = run.last.state
            run.queue.changeStation()
            for entry in all { run.queue.push(entry) }
            run.queue.push(.ended(.endOfStream))
            return true
        })
        #expect(!run.stuck)
        let heard = try #require(heardAtChange)
        #expect(stateAtChange == .playing)
        #expect(run.last.state == .stopped(.endOfStream), "\(run.states)")
        #expect(run.output.calls.contains("discard"))
        // The device drops what it held of the first station and is configured afresh for the
        // next (the fake counts from there): all of the next is heard, nothing of the first.
        #expect(heard > 0)
        #expect(run.output.calls == ["configure 44100 Hz × 2", "start", "discard", "configure 44100 Hz × 2", "start", "drain"])
        #expect(run.output.framesHeard == Self.totalFrames)
        #expect(run.last.underruns == 0)
        let change = try #require(run.statuses.firstIndex { $0.title == nil && $0.trackNumber == 0 && $0.framesHeard > 0 })
        #expect(run.statuses[change].state == .connecting)
        let after = run.statuses[change...]
        #expect(after.contains { $0.trackNumber == 1 && $0.title?.raw == Self.program.tracks[0].title })
        #expect(after.contains { $0.trackNumber == 2 && $0.title?.raw == Self.program.tracks[1].title })
        #expect(after.contains { $0.state == .playing })
    }

    @Test("A sound card that drains by blocking: the end follows the drain at once, even when a key (pause) arrived meanwhile")
    func cardDrain() {
        let entries = Self.entries() + [.ended(.endOfStream)]
        let run = Self.run(bufferSeconds: 1, entries: entries, prepare: { run in
            run.output.drainsLikeACard = true
            let queue = run.queue
            run.output.duringDrain = { queue.send(.togglePause) }
        })
        #expect(!run.stuck)
        #expect(run.last.state == .stopped(.endOfStream), "\(run.states)")
        #expect(run.output.framesHeard == Self.totalFrames)
        #expect(!run.output.calls.contains("pause"))
    }

    @Test("A stall: the device runs dry once, the player buffers, then plays the rest; nothing lost or heard twice")
    func stall() {
        let all = Self.entries()
        let split = all.count / 3
        var pushedRest = false
        let run = Self.run(bufferSeconds: 1, entries: Array(all[..<split])) { run, sleep in
            // The rest arrives while the player waits for audio after running dry.
            guard !pushedRest, sleep == nil, run.last.underruns == 1 else { return false }
            pushedRest = true
            run.clock.advance(by: 0.5)
            for entry in all[split...] { run.queue.push(entry) }
            run.queue.push(.ended(.endOfStream))
            return true
        }
        #expect(!run.stuck)
        #expect(pushedRest)
        #expect(run.last.state == .stopped(.endOfStream))
        #expect(run.last.underruns == 1)
        #expect(run.output.framesWritten == Self.totalFrames)
        #expect(run.output.framesHeard == Self.totalFrames)
        #expect(run.output.calls.filter { $0 == "recover" }.count == 1)
        let states = run.states.map { state -> String in if case .buffering = state { "buffering" } else { "\(state)" } }
        #expect(states.drop { $0 != "playing" }.starts(with: ["playing", "buffering", "playing"]), "\(states)")
    }

    @Test("Quitting while playing discards what the device holds and ends at once")
    func quit() {
        let entries = Self.entries() + [.ended(.endOfStream)]
        let quitAt = ManualClock.start + 2
        var sent = false
        let run = Self.run(bufferSeconds: 1, entries: entries) { run, _ in
            guard !sent, run.clock.now() >= quitAt else { return false }
            sent = true
            run.queue.send(.stop(.userRequest))
            return true
        }
        #expect(!run.stuck)
        #expect(run.last.state == .stopped(.userRequest))
        #expect(run.output.calls.last == "stop")
        #expect(!run.output.calls.contains("drain"))
        #expect(run.output.framesHeard < Self.totalFrames)
        #expect(run.output.framesWritten == run.output.framesHeard, "what was not heard was discarded")
    }

    @Test("Pause holds the device and the clock does not count as heard; resume plays on to the end")
    func pause() {
        let entries = Self.entries() + [.ended(.endOfStream)]
        let pauseAt = ManualClock.start + 1.5
        var step = 0
        var heardWhenPaused = 0
        let run = Self.run(bufferSeconds: 1, entries: entries) { run, _ in
            switch step {
            case 0 where run.clock.now() >= pauseAt:
                step = 1
                run.queue.send(.togglePause)
                return true
            case 1 where run.last.state == .paused:
                // Ten seconds pass while paused: nothing is heard meanwhile.
                step = 2
                heardWhenPaused = run.output.framesHeard
                run.clock.advance(by: 10)
                #expect(run.output.framesHeard == heardWhenPaused)
                run.queue.send(.togglePause)
                return true
            default:
                return false
            }
        }
        #expect(!run.stuck)
        #expect(step == 2)
        #expect(heardWhenPaused > 0)
        #expect(run.last.state == .stopped(.endOfStream))
        #expect(run.output.framesHeard == Self.totalFrames)
        #expect(run.last.underruns == 0)
        #expect(run.output.calls.contains("pause") && run.output.calls.contains("resume"))
    }

    @Test("A volume change is heard at once on a device that rewinds (all but 0.1 s of what it held is written again at the new gain), and after what it held on one that cannot; every frame once, no underrun",
          arguments: [true, false])
    func volumeChange(deviceRewinds: Bool) throws {
        let entries = Self.entries() + [.ended(.endOfStream)]
        let reference = Self.run(bufferSeconds: 1, entries: entries).output.samples
        let changeAt = ManualClock.start + 1.5
        var heardAtChange: Int?
        var writtenAtChange = 0
        let run = Self.run(bufferSeconds: 1, entries: entries, script: { run, _ in
            guard heardAtChange == nil, run.clock.now() >= changeAt else { return false }
            heardAtChange = run.output.framesHeard
            writtenAtChange = run.output.framesWritten
            run.queue.send(.setAmplitude(0.5))
            return true
        }, prepare: { $0.output.rewinds = deviceRewinds })
        #expect(!run.stuck)
        #expect(run.last.state == .stopped(.endOfStream))
        #expect(run.last.underruns == 0)
        #expect(run.output.framesHeard == Self.totalFrames)
        let samples = run.output.samples
        #expect(samples.count == reference.count)
        let heard = try #require(heardAtChange)
        let channels = reference.count / Self.totalFrames
        let halved = { (index: Int) in Int16(truncatingIfNeeded: (Int32(reference[index]) * (1 << 14)) >> 15) }
        // Heard before the change, and the 0.1 s the device keeps: as it was.
        let kept = heard + Int(0.1 * 44100)
        #expect(samples[..<(kept * channels)] == reference[..<(kept * channels)])
        // What the device held beyond that: at half amplitude where it rewinds, still at full
        // where it cannot (then half once that has played).
        let held = writtenAtChange
        #expect(held > kept + 4410, "the device held \(held - heard) frames at the change")
        let rewritten = (kept * channels)..<(held * channels)
        if deviceRewinds {
            #expect(run.output.calls.contains("rewind"))
            #expect(rewritten.allSatisfy { samples[$0] == halved($0) }, "the rewound audio at half amplitude")
        } else {
            #expect(rewritten.allSatisfy { samples[$0] == reference[$0] }, "what the device held, unchanged")
        }
        // Everything after what the device held, at half amplitude either way: what was staged
        // (decoded, not yet written) at the change is rescaled too.
        #expect(((held * channels)..<samples.count).allSatisfy { samples[$0] == halved($0) })
    }
}
