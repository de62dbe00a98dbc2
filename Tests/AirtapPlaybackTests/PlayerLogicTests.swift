@testable import AirtapKit
@testable import AirtapPlayback
import AirtapTestSupport
import ICYWire
import Synchronization
import Testing

/// The player's rules without a device, a thread or a clock.
@Suite("Player logic (Play)")
struct PlayerLogicTests {
    @Test("Connecting, buffering by percent, playing once --buffer is queued")
    func startUp() {
        var machine = PlaybackMachine(bufferSeconds: 2)
        #expect(machine.state == .connecting)
        #expect(machine.queued(seconds: 0, complete: false) == .none)
        #expect(machine.state == .connecting)
        #expect(machine.queued(seconds: 1, complete: false) == .none)
        #expect(machine.state == .buffering(percent: 50))
        #expect(machine.queued(seconds: 2, complete: false) == .play)
        #expect(machine.state == .playing)
    }

    @Test("Another station: from playing, paused, or after the last one's end, the player waits for a full buffer as at first; once stopped it stays stopped")
    func changeStation() {
        var machine = PlaybackMachine(bufferSeconds: 2)
        _ = machine.queued(seconds: 2, complete: false)
        _ = machine.togglePause()
        #expect(machine.state == .paused)
        #expect(machine.changeStation() == .none)
        #expect(machine.state == .connecting)
        // As at first: `.play`, not a recovery after an underrun.
        #expect(machine.queued(seconds: 1, complete: false) == .none)
        #expect(machine.queued(seconds: 2, complete: false) == .play)
        // The last station's end no longer counts.
        _ = machine.streamEnded(.endOfStream)
        _ = machine.changeStation()
        #expect(machine.step(.init(waitingSeconds: 0, stagedFrames: 0, delayFrames: 0, deviceIsPlaying: false,
                                   queueIsEmpty: true, queueIsComplete: false)) == .none)
        #expect(machine.state == .connecting)
        _ = machine.finish(.userRequest)
        _ = machine.changeStation()
        #expect(machine.state == .stopped(.userRequest))
    }

    @Test("The network may rest only while playing with audio ahead: half of what is beyond 0.1 s, none below 0.25 s, at most 2 s, over 1 s only leaving 1.5 s for a reconnect")
    func networkSlack() {
        var machine = PlaybackMachine(bufferSeconds: 1)
        #expect(!machine.allowsNetworkRest)  // connecting: first audio comes first
        _ = machine.queued(seconds: 0.5, complete: false)
        #expect(!machine.allowsNetworkRest)  // buffering
        _ = machine.queued(seconds: 1, complete: false)
        #expect(machine.state == .playing)
        #expect(PlaybackMachine.networkSlack(waitingSeconds: 0.5) == 0)  // 0.2 s: a rest shorter than a station's writes
        #expect(abs(PlaybackMachine.networkSlack(waitingSeconds: 0.7) - 0.3) < 1e-9)
        #expect(abs(PlaybackMachine.networkSlack(waitingSeconds: 1.5) - 0.7) < 1e-9)
        #expect(abs(PlaybackMachine.networkSlack(waitingSeconds: 2.3) - 1.0) < 1e-9)  // 1.1 by half: held to 1 s
        #expect(abs(PlaybackMachine.networkSlack(waitingSeconds: 2.7) - 1.2) < 1e-9)  // 1.3 by half: 1.5 s must stay
        #expect(abs(PlaybackMachine.networkSlack(waitingSeconds: 3.5) - 1.7) < 1e-9)
        #expect(PlaybackMachine.networkSlack(waitingSeconds: 5) == 2)
        #expect(machine.allowsNetworkRest)
        _ = machine.togglePause()
        #expect(machine.allowsNetworkRest)  // paused: the queue fills anyway
        _ = machine.togglePause()
        _ = machine.ranDry()
        #expect(!machine.allowsNetworkRest)  // refilling after an underrun
    }

    @Test("The network rests for the audio waiting as the rest begins (the queue then, and what the device still holds), only when the player allows it, and at most 1 s while a recording runs")
    func networkRest() {
        let rest = NetworkRest()
        let reported = ContinuousClock.now
        #expect(rest.length(queuedSeconds: { 10 }, at: reported) == .zero)  // nothing reported yet
        rest.playerReports(PlayerDevice(allowsRest: true, heldSeconds: 1, isPlaying: true), at: reported)
        // 3 s queued and 1 s in the device: half of what is beyond 0.1 s.
        #expect(rest.length(queuedSeconds: { 3 }, at: reported) == .milliseconds(1950))
        // 0.6 s on, the device holds 0.4 s of it.
        #expect(rest.length(queuedSeconds: { 3 }, at: reported + .milliseconds(600)) == .milliseconds(1650))
        // Long after, only the queue counts.
        #expect(rest.length(queuedSeconds: { 3 }, at: reported + .seconds(5)) == .milliseconds(1450))
        rest.recordingStarted()
        #expect(rest.length(queuedSeconds: { 3 }, at: reported) == .seconds(1))
        rest.recordingStarted()  // r pressed while a --record recording drains
        rest.recordingEnded()
        #expect(rest.length(queuedSeconds: { 3 }, at: reported) == .seconds(1))
        #expect(rest.length(queuedSeconds: { 0.5 }, at: reported) == .milliseconds(700))
        rest.recordingEnded()
        #expect(rest.length(queuedSeconds: { 3 }, at: reported) == .milliseconds(1950))
        // Paused, the device holds what it held.
        rest.playerReports(PlayerDevice(allowsRest: true, heldSeconds: 1, isPlaying: false), at: reported)
        #expect(rest.length(queuedSeconds: { 3 }, at: reported + .seconds(5)) == .milliseconds(1950))
        rest.playerReports(PlayerDevice(allowsRest: false, heldSeconds: 1, isPlaying: true), at: reported)
        #expect(rest.length(queuedSeconds: { 10 }, at: reported) == .zero)
    }

    @Test("With no buffer, playback starts with the first audio, not before")
    func zeroBuffer() {
        var machine = PlaybackMachine(bufferSeconds: 0)
        #expect(machine.queued(seconds: 0, complete: false) == .none)
        #expect(machine.state == .connecting)
        #expect(machine.queued(seconds: 0.026, complete: false) == .play)
    }

    @Test("Running dry: one underrun, buffering, then recover the device and play")
    func underrun() {
        var machine = PlaybackMachine(bufferSeconds: 1)
        _ = machine.queued(seconds: 1, complete: false)
        #expect(machine.ranDry() == .none)
        #expect(machine.state == .buffering(percent: 0))
        #expect(machine.underruns == 1)
        #expect(machine.ranDry() == .none)  // not playing: not counted again
        #expect(machine.underruns == 1)
        #expect(machine.queued(seconds: 1, complete: false) == .recoverAndPlay)
        #expect(machine.state == .playing)
    }

    @Test("A short stream that ends before the buffer fills plays at once")
    func shortStream() {
        var machine = PlaybackMachine(bufferSeconds: 5)
        #expect(machine.queued(seconds: 0.5, complete: true) == .play)
    }

    @Test("Running dry while the session reconnects shows reconnecting(attempt)")
    func reconnecting() {
        var machine = PlaybackMachine(bufferSeconds: 1)
        _ = machine.queued(seconds: 1, complete: false)
        _ = machine.connection(.reconnecting(attempt: 2, after: 1, reason: "test"))
        #expect(machine.state == .playing)  // still audio queued: the listener hears nothing wrong
        _ = machine.ranDry()
        #expect(machine.state == .reconnecting(attempt: 2))
        _ = machine.connection(.streaming(url: "x"))
        #expect(machine.state == .buffering(percent: 0))
    }

    @Test("Pause and resume return to the state before; stopped is final")
    func pauseAndStop() {
        var machine = PlaybackMachine(bufferSeconds: 1)
        _ = machine.queued(seconds: 1, complete: false)
        #expect(machine.togglePause() == .pauseDevice)
        #expect(machine.state == .paused)
        #expect(machine.togglePause() == .resumeDevice)
        #expect(machine.state == .playing)
        #expect(machine.finish(.userRequest) == .stop(.userRequest))
        #expect(machine.finish(.endOfStream) == .none)
        #expect(machine.togglePause() == .none)
        #expect(machine.state == .stopped(.userRequest))
    }

    static func seen(waiting: Double = 0, staged: Int = 0, delay: Int = 0, playing: Bool = false,
                     queueEmpty: Bool = true, complete: Bool = true) -> PlaybackMachine.Observation {
        PlaybackMachine.Observation(waitingSeconds: waiting, stagedFrames: staged, delayFrames: delay,
                                    deviceIsPlaying: playing, queueIsEmpty: queueEmpty, queueIsComplete: complete)
    }

    @Test("The end while playing: draining (the device plays out what it holds), then the end with nothing discarded")
    func drainingAtTheEnd() {
        var machine = PlaybackMachine(bufferSeconds: 1)
        _ = machine.queued(seconds: 1, complete: false)
        #expect(machine.streamEnded(.endOfStream) == .none)
        #expect(machine.state == .playing)
        // Decoded audio still to write: not yet.
        #expect(machine.step(Self.seen(waiting: 0.5, staged: 1152, delay: 20000, playing: true)) == .none)
        #expect(machine.step(Self.seen(waiting: 0.5, delay: 22050, playing: true)) == .drain)
        #expect(machine.state == .draining(.endOfStream))
        #expect(machine.step(Self.seen(waiting: 0.1, delay: 4410, playing: true)) == .drain)
        #expect(machine.step(Self.seen()) == .end(.endOfStream))
        #expect(machine.state == .stopped(.endOfStream))
        #expect(machine.step(Self.seen()) == .none)
        #expect(machine.underruns == 0)
    }

    @Test("The end before the buffer filled: what is there plays at once; with nothing there, the end at once")
    func endWhileBuffering() {
        var short = PlaybackMachine(bufferSeconds: 5)
        _ = short.streamEnded(.endOfStream)
        #expect(short.step(Self.seen(waiting: 0.5, delay: 22050)) == .play)
        #expect(short.state == .draining(.endOfStream))
        var empty = PlaybackMachine(bufferSeconds: 5)
        _ = empty.streamEnded(.endOfStream)
        #expect(empty.step(Self.seen()) == .end(.endOfStream))
        // After running dry, the rest of a stream that ended plays after a recovery.
        var dry = PlaybackMachine(bufferSeconds: 1)
        _ = dry.queued(seconds: 1, complete: false)
        #expect(dry.step(Self.seen(complete: false)) == .none)
        #expect(dry.underruns == 1)
        _ = dry.streamEnded(.endOfStream)
        #expect(dry.step(Self.seen(waiting: 0.2, delay: 8820)) == .recoverAndPlay)
        #expect(dry.state == .draining(.endOfStream))
    }

    @Test("Playing: a device that stopped with nothing left is an underrun; one that holds audio is started again")
    func playingSteps() {
        var machine = PlaybackMachine(bufferSeconds: 1)
        _ = machine.queued(seconds: 1, complete: false)
        #expect(machine.step(Self.seen(waiting: 1, delay: 22050, playing: true, complete: false)) == .none)
        // Written but not playing (after a format change): start it.
        #expect(machine.step(Self.seen(waiting: 0.5, delay: 22050, complete: false)) == .play)
        // Decoded audio waits for room: not dry.
        #expect(machine.step(Self.seen(waiting: 0.1, staged: 1152, complete: false)) == .none)
        #expect(machine.underruns == 0)
        #expect(machine.step(Self.seen(complete: false)) == .none)
        #expect(machine.underruns == 1)
        #expect(machine.state == .buffering(percent: 0))
    }

    @Test("Pausing while draining resumes draining; quitting while draining discards")
    func pauseWhileDraining() {
        var machine = PlaybackMachine(bufferSeconds: 1)
        _ = machine.queued(seconds: 1, complete: false)
        _ = machine.streamEnded(.endOfStream)
        _ = machine.step(Self.seen(waiting: 0.5, delay: 22050, playing: true))
        #expect(machine.togglePause() == .pauseDevice)
        #expect(machine.step(Self.seen(waiting: 0.5, delay: 22050)) == .none)
        #expect(machine.togglePause() == .resumeDevice)
        #expect(machine.state == .draining(.endOfStream))
        #expect(machine.finish(.userRequest) == .stop(.userRequest))
        #expect(machine.state == .stopped(.userRequest))
    }

    @Test("Keys map to actions; others do nothing")
    func keys() {
        #expect(PlayerKeyAction(key: UInt8(ascii: " ")) == .togglePause)
        #expect(PlayerKeyAction(key: UInt8(ascii: "+")) == .changeVolume(by: 5))
        #expect(PlayerKeyAction(key: UInt8(ascii: "-")) == .changeVolume(by: -5))
        #expect(PlayerKeyAction(key: UInt8(ascii: "s")) == .saveSong)
        #expect(PlayerKeyAction(key: UInt8(ascii: "r")) == .toggleRecording)
        #expect(PlayerKeyAction(key: UInt8(ascii: ">")) == .moveStation(forward: true))
        #expect(PlayerKeyAction(key: UInt8(ascii: "<")) == .moveStation(forward: false))
        #expect(PlayerKeyAction(key: UInt8(ascii: "q")) == .quit)
        #expect(PlayerKeyAction(key: UInt8(ascii: "x")) == nil)
    }

    @Test("Arrow and function keys do nothing (their escape sequences hold no key), plain keys around them still act")
    func escapeSequences() {
        var decoder = PlayerKeyDecoder()
        func actions(_ text: String) -> [PlayerKeyAction] { text.utf8.compactMap { decoder.action(for: $0) } }
        #expect(actions("\u{1B}[A\u{1B}[B\u{1B}OP") == [])          // up, down, F1
        #expect(actions("\u{1B}[20~") == [])                         // F9: its "0" is not volume up
        #expect(actions("\u{1B}[1;2As") == [.saveSong])              // shift+up, then s
        #expect(actions("\u{1B}") == [])                              // a lone ESC quits nothing...
        #expect(actions("q") == [])                                   // ...and eats the byte after it
        #expect(actions(" q") == [.togglePause, .quit])
    }

    @Test("The emulated playhead hears nothing before its start, then in real time; runs dry and holds; pauses")
    func playhead() {
        // Binary fractions of a second, so the arithmetic is exact.
        var head = EmulatedPlayhead(sampleRate: 1024)
        var dry = head.wrote(512, at: 10)
        #expect(!dry)
        #expect(head.delay(at: 10) == 512)
        #expect(head.delay(at: 11) == 512)  // written is not heard until started
        #expect(!head.isPlaying(at: 11))
        head.start(at: 11)
        #expect(head.isPlaying(at: 11))
        #expect(head.delay(at: 11.25) == 256)
        dry = head.ranDry(at: 11.25)
        #expect(!dry)
        #expect(head.delay(at: 12) == 0)
        dry = head.ranDry(at: 12)
        #expect(dry)
        dry = head.ranDry(at: 12.5)
        #expect(!dry)  // reported once
        head.wrote(128, at: 12.5)  // held, like a device after an xrun, until started again
        #expect(head.delay(at: 13) == 128)
        head.start(at: 13)
        #expect(head.delay(at: 13.0625) == 64)
        head.pause(at: 13.0625)
        #expect(head.delay(at: 20) == 64)
        head.resume(at: 20)
        #expect(head.delay(at: 20.0625) == 0)
        dry = head.wrote(64, at: 21)
        #expect(dry)  // it had run dry at 20.0625: the new frames wait
        head.pause(at: 21)  // paused while dry: resuming does not start it
        head.resume(at: 22)
        #expect(head.delay(at: 23) == 64)
    }

    @Test("The queue keeps at most its capacity, dropping the oldest audio but never a title")
    func boundedQueue() throws {
        let queue = PlaybackQueue(capacitySeconds: 1)
        let header = try #require(MP3FrameHeader([UInt8]([0xFF, 0xFB, 0x90, 0x64])).map { AudioFrameHeader.mpeg($0) })
        let packet = { (position: Int) in Packet(bytes: ArraySlice(repeating: 0, count: 417), position: position, header: header) }
        queue.push(.title(TrackInfo(streamTitle: "A - B"), number: 1))
        for index in 0..<200 { queue.push(.packet(packet(index * 417))) }
        let fill = queue.fill
        #expect(fill.seconds <= 1)
        #expect(fill.dropped == 200 - Int(1 / header.duration))
        guard case .title(let info, 1) = queue.take() else {
            Issue.record("the title went missing")
            return
        }
        #expect(info.title == "B")
        guard case .packet(let first) = queue.take() else {
            Issue.record("no packet")
            return
        }
        #expect(first.position == fill.dropped * 417)
    }

    @Test("Audio that claims no duration (Ogg pages of a hostile station) is bounded by bytes: the queue drops the oldest")
    func zeroDurationAudioIsBoundedByBytes() {
        let queue = PlaybackQueue(capacitySeconds: 1)
        let page = 4096
        let header = AudioFrameHeader.oggPage(OggPageHeader(
            codec: .vorbis, sampleRate: 44100, channels: 2, nominalBitrate: nil, linkNumber: 0, kind: .audio,
            isLinkStart: false, pageLength: page, granulePosition: 0, samples: 0))
        let pushed = 3 * PlaybackQueue.bytesPerSecondOfCapacity / page
        for index in 0..<pushed {
            queue.push(.packet(Packet(bytes: ArraySlice(repeating: 0, count: page), position: index * page, header: header)))
        }
        let kept = PlaybackQueue.bytesPerSecondOfCapacity / page
        #expect(queue.fill.dropped == pushed - kept)
        var taken = 0
        while case .packet = queue.take() { taken += 1 }
        #expect(taken == kept)
    }
}
