@testable import AirtapCuts
@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapPlayback
@testable import AirtapRecording
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
@testable import CurlSource
import Foundation
@testable import ICYWire
@testable import Locking
import Logging
import Synchronization
@testable import TestStation
import Testing

/// 16-bit PCM from a WAV file written by ALSA's `file` plugin.
struct WAVAudio {
    let sampleRate: Int
    let channels: Int
    /// Interleaved.
    let samples: [Int16]
    var frameCount: Int { samples.count / max(1, channels) }

    init(path: String) throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        func word(_ at: Int, _ size: Int) -> Int {
            (0..<size).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) }
        }
        var offset = 12, rate = 0, channels = 0, data: Range<Int>?
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = word(offset + 4, 4)
            if id == "fmt " {
                channels = word(offset + 10, 2)
                rate = word(offset + 12, 4)
            } else if id == "data" {
                // The plugin may leave the size at 0 or too large until it closes: trust the file's end.
                let end = size == 0 ? bytes.count : min(bytes.count, offset + 8 + size)
                data = offset + 8..<end
                break
            }
            offset += 8 + size
        }
        let range = try #require(data)
        sampleRate = rate
        self.channels = channels
        samples = stride(from: range.lowerBound, to: range.upperBound - 1, by: 2).map {
            Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8)
        }
    }

    /// The tone's frequency in frames `range` of the left channel, by counting zero crossings.
    func frequency(frames range: Range<Int>) -> Double {
        var crossings = 0
        var previous = samples[range.lowerBound * channels]
        for frame in range.dropFirst() {
            let sample = samples[frame * channels]
            if (previous < 0) != (sample < 0) { crossings += 1 }
            previous = sample
        }
        return Double(crossings) / 2 / (Double(range.count) / Double(sampleRate))
    }
}

/// Records what the player reported, and what it had written when each title arrived from the station.
final class PlayerObserver: StreamSink, @unchecked Sendable {
    // Why @unchecked Sendable is sound: `player` is set once before the session starts; the
    // collections live in Mutexes; `onStatus` is a Sendable constant.
    var player: Player?
    let statuses = Locked<[PlayerStatus]>([])
    /// Called with each status on the player thread: a test reacts to the player's own event
    /// there, not on a poll that a starved task pool could hold back.
    private let onStatus: @Sendable (PlayerStatus) -> Void

    let arrivals = Locked<[(title: String, framesHeard: Int)]>([])
    /// Audio bytes in the packets the session delivered.
    let audioBytes = Atomic<Int>(0)

    init(onStatus: @escaping @Sendable (PlayerStatus) -> Void = { _ in }) {
        self.onStatus = onStatus
    }

    func record(_ status: PlayerStatus) {
        statuses.withLock { $0.append(status) }
        onStatus(status)
    }

    func receive(_ event: StreamEvent) throws {
        if case .packet(let packet) = event { audioBytes.add(packet.bytes.count, ordering: .relaxed) }
        guard case .metadata(let change) = event else { return }
        let heard = player?.status.framesHeard ?? 0
        arrivals.withLock { $0.append((change.info.raw, heard)) }
    }
}

@Suite("Play")
struct PlayTests {
    static let titles = ["Tone A - 440", "Tone B - 554", "Tone C - 659"]
    static let trackSeconds = 1.5
    static let program: StationProgram = {
        do {
            return try StationProgram(configuration: StationConfiguration(trackSeconds: trackSeconds, titles: titles))
        } catch {
            fatalError("cannot encode: \(error)")
        }
    }()

    static func configuration(pace: StationConfiguration.Pace = .realtime, maxSeconds: Double = 4.5,
                              stall: StationConfiguration.Stall? = nil) -> StationConfiguration {
        var configuration = StationConfiguration(metaint: 2000, trackSeconds: trackSeconds, pace: pace, titles: titles,
                                                 maxSeconds: maxSeconds)
        configuration.stall = stall
        return configuration
    }

    static func wavPath() throws -> String {
        try AirtapBinary.temporaryFolder().appendingPathComponent("out.wav").path
    }

    /// PCM frames the station sends for `seconds`: mpg123 turns every MP3 frame into 1152.
    static func sentFrames(seconds: Double) -> Int {
        let bytes = program.audioByteCount(from: 0, seconds: seconds)
        return program.frameIndex(atOrAfter: bytes) * program.samplesPerFrame
    }

    /// The first PCM frame of the packet at or after `offset`: where a title at that byte starts.
    static func pcmFrame(atOrAfter offset: Int) -> Int {
        program.frameIndex(atOrAfter: offset) * program.samplesPerFrame
    }

    /// Each track's tone is at its frequency in the WAV (edges trimmed: the encoder's delay and the boundary).
    static func expectTones(_ wav: WAVAudio, totalSeconds: Double) {
        for track in program.tracks {
            let start = pcmFrame(atOrAfter: track.startOffset)
            let end = min(pcmFrame(atOrAfter: track.endOffset), wav.frameCount)
            guard end - start > wav.sampleRate / 2 else { continue }
            let margin = wav.sampleRate / 5
            let measured = wav.frequency(frames: (start + margin)..<(end - margin))
            #expect(abs(measured - track.frequency) / track.frequency < 0.02,
                    "track \(track.index): \(measured) Hz, expected \(track.frequency) Hz")
        }
    }

    /// Plays a station in process into a WAV file and returns what the player reported.
    static func play(_ server: TestStationServer, bufferSeconds: Double, wav: String,
                     observer: PlayerObserver = PlayerObserver()) async throws
        -> (reason: StopReason, observer: PlayerObserver) {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let station = Station(id: "tones", name: "Tones FM", urls: [server.streamURL])
        let player = Player(
            configuration: PlayerConfiguration(device: "file:'\(wav)',wav", bufferSeconds: bufferSeconds),
            logger: Logger(label: "test"),
            onChange: { observer.record($0) })
        observer.player = player
        try player.start()
        let session = StationSession(station: station, loop: loop, options: IngestOptions(connectTimeout: 30, stallTimeout: 30),
                                     sinks: [player.feed, observer], logger: Logger(label: "test"))
        session.start()
        let reason = await player.stopped()
        await reportStall(await session.stopped(), url: server.streamURL)
        if reason != .endOfStream {
            // Whose stall it was: what the station handed its socket, and what reached the sinks.
            print("play stopped with \(reason); station: \(server.connections); packets carried \(observer.audioBytes.load(ordering: .relaxed)) audio bytes")
        }
        return (reason, observer)
    }

    @Test("Plays into an ALSA file device: every second of audio, each track's tone at its frequency")
    func wavCapture() async throws {
        let server = try await TestStationServer.start(Self.configuration(), program: Self.program)
        defer { Task { try? await server.stop() } }
        let wav = try Self.wavPath()
        let result = try await AirtapBinary.run(["play", server.streamURL, "--device", "file:'\(wav)',wav",
                                           "--buffer", "0.5s", "--retries", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let audio = try WAVAudio(path: wav)
        #expect(audio.sampleRate == 44100 && audio.channels == 2)
        #expect(audio.frameCount == Self.sentFrames(seconds: 4.5))
        Self.expectTones(audio, totalSeconds: 4.5)
        // Not on a terminal: log lines, among them the titles and the end.
        #expect(result.stderr.contains("title: Tone B - 554"))
        #expect(result.stderr.contains("stopped: end of stream"))
    }

    @Test("A station that pauses longer than the buffer: buffering, one underrun, the audio after it intact")
    func stall() async throws {
        // The station holds its pause until the player has run dry: however far ahead a slow
        // start left the player, the pause is longer than what it holds.
        let configuration = Self.configuration(stall: .untilResumed(afterSeconds: 2))
        let server = try await TestStationServer.start(configuration, program: Self.program)
        defer { Task { try? await server.stop() } }
        let wav = try Self.wavPath()
        // Resumed from the player thread as the underrun is reported: a poll on the task pool
        // could be held back past the stall timeout by a loaded machine.
        let observer = PlayerObserver { status in
            if status.underruns >= 1 { server.resumeStall() }
        }
        let (reason, _) = try await Self.play(server, bufferSeconds: 0.5, wav: wav, observer: observer)
        #expect(reason == .endOfStream)
        let states = observer.statuses.withLock { $0 }.map(\.state)
        let firstPlaying = try #require(states.firstIndex(of: .playing))
        #expect(states[firstPlaying...].contains { if case .buffering = $0 { true } else { false } },
                "\(states)")
        #expect(states.last == .stopped(.endOfStream))
        // At least the pause's; a machine slowed enough (ThreadSanitizer beside a loaded CI) can
        // starve the refilled half second once more, which costs a wait, never audio.
        #expect((observer.statuses.withLock { $0.last?.underruns } ?? 0) >= 1)
        // Nothing was lost: the whole stream, and the tracks after the pause at their frequencies.
        let audio = try WAVAudio(path: wav)
        #expect(audio.frameCount == Self.sentFrames(seconds: 4.5))
        Self.expectTones(audio, totalSeconds: 4.5)
    }

    @Test("Audio goes to the device as it arrives, and is heard only once --buffer is waiting")
    func writtenBeforeHeard() async throws {
        let server = try await TestStationServer.start(Self.configuration(), program: Self.program)
        defer { Task { try? await server.stop() } }
        let wav = try Self.wavPath()
        let buffer = 1.0
        let (reason, observer) = try await Self.play(server, bufferSeconds: buffer, wav: wav)
        #expect(reason == .endOfStream)
        let statuses = observer.statuses.withLock { $0 }
        let firstPlaying = try #require(statuses.firstIndex { $0.state == .playing })
        let before = statuses[..<firstPlaying]
        // While buffering the device already holds audio, and none of it is heard …
        #expect(before.contains { $0.framesWritten > 0 }, "\(before.map(\.framesWritten))")
        #expect(before.allSatisfy { $0.framesHeard == 0 }, "\(before.map(\.framesHeard))")
        // … until a whole buffer waits (queued plus written).
        #expect(statuses[firstPlaying].bufferedSeconds >= buffer - 0.001, "\(statuses[firstPlaying])")
        // The device starts just before this status is read, so a few frames may already have
        // played (2 in one run); what matters is that the buffer waited first, checked above.
        #expect(Double(statuses[firstPlaying].framesHeard) < buffer * 44100 / 4, "\(statuses[firstPlaying])")
        let audio = try WAVAudio(path: wav)
        #expect(audio.frameCount == Self.sentFrames(seconds: 4.5))
    }

    @Test("With a large buffer the new title is reported once its audio is heard, not when it arrives")
    func titleTiming() async throws {
        let server = try await TestStationServer.start(Self.configuration(), program: Self.program)
        defer { Task { try? await server.stop() } }
        let wav = try Self.wavPath()
        let buffer = 2.5
        let (reason, observer) = try await Self.play(server, bufferSeconds: buffer, wav: wav)
        #expect(reason == .endOfStream)
        let announced = announcedTitles(server, audioCount: Self.program.audioByteCount(from: 0, seconds: 4.5))
        let statuses = observer.statuses.withLock { $0 }
        let arrivals = observer.arrivals.withLock { $0 }
        let audio = try WAVAudio(path: wav)
        #expect(announced.count == 3)
        var arrivedWellAhead = 0
        for (index, title) in announced.enumerated().dropFirst() {
            let titleFrame = Self.pcmFrame(atOrAfter: title.audioOffset)
            let shown = try #require(statuses.first { $0.title?.raw == title.title }, "\(title.title) never shown")
            // Shown only once the audio at its position was written and heard …
            #expect(shown.framesWritten >= titleFrame, "\(title.title): written \(shown.framesWritten) < \(titleFrame)")
            #expect(shown.framesHeard >= titleFrame, "\(title.title): heard \(shown.framesHeard) < \(titleFrame)")
            // … though it arrived before that audio was heard …
            let arrival = try #require(arrivals.first { $0.title == title.title })
            #expect(arrival.framesHeard <= titleFrame, "\(title.title) arrived with \(arrival.framesHeard) heard")
            if arrival.framesHeard < titleFrame - audio.sampleRate { arrivedWellAhead += 1 }
            // … and the audio from there on is the new track's tone.
            let measured = audio.frequency(frames: titleFrame..<(titleFrame + audio.sampleRate / 4))
            let expected = Self.program.tracks[index].frequency
            #expect(abs(measured - expected) / expected < 0.03, "\(title.title): \(measured) Hz")
        }
        // With 2.5 s buffered, a title comes well ahead of its audio (so showing it on arrival
        // would fail above), unless a starved machine let the buffer run low just then: one such
        // title is enough to tell.
        #expect(arrivedWellAhead >= 1, "every title arrived less than a second before its audio was heard")
    }

    @Test("--record while playing: files as airtap record writes them, from one connection")
    func recordWhilePlaying() async throws {
        let server = try await TestStationServer.start(Self.configuration(pace: .fast), program: Self.program)
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let result = try await AirtapBinary.run(["play", server.streamURL, "--device", "null", "--buffer", "0.2s", "--retries", "0",
                                           "--record", "--out", folder.path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(server.connectionsServed == 1)
        let files = filesBelow(folder).filter { $0.hasSuffix(".mp3") }
        #expect(files.count == 3, "\(files)")
        #expect(files.filter { $0.contains("/incomplete/") }.count == 2)
        #expect(files.contains("Tones FM/Tone B - 554.mp3") || files.contains { $0.hasSuffix("/Tone B - 554.mp3") }, "\(files)")
        // Every frame the station sent, in order, across the files (first, middle, last).
        let sent = Self.program.audio(from: 0, count: Self.program.audioByteCount(from: 0, seconds: 4.5))
        let ordered = files.sorted { a, b in
            let rank = { (name: String) in name.contains("Tone A") ? 0 : name.contains("Tone B") ? 1 : 2 }
            return rank(a) < rank(b)
        }
        let audio = try ordered.flatMap { try RecordedFileContents(path: folder.appendingPathComponent($0).path).audio }
        #expect(audio == sent)
        let middle = try RecordedFileContents(path: folder.appendingPathComponent(ordered[1]).path)
        #expect(middle.tag?.title == "554")
        #expect(middle.tag?.artist == "Tone B")
    }

    @Test("A missing device: one line naming it and suggesting --device, exit 3, no connection")
    func missingDevice() async throws {
        let server = try await TestStationServer.start(Self.configuration(), program: Self.program)
        defer { Task { try? await server.stop() } }
        let result = try await AirtapBinary.run(["play", server.streamURL, "--device", "nosuchdevice"])
        #expect(result.status == 3)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(lines.first?.hasPrefix("airtap: ") == true)
        #expect(lines.first?.contains("'nosuchdevice'") == true)
        #expect(lines.first?.contains("--device") == true)
        #expect(server.connectionsServed == 0)
    }
}

@Suite("Play: save this song")
struct SaveSongTests {
    @Test("s saves the song being heard from its title change to the next, tagged, as a complete file")
    func saveFromBeginning() async throws {
        let server = try await TestStationServer.start(PlayTests.configuration(pace: .fast), program: PlayTests.program)
        defer { Task { try? await server.stop() } }
        let events = await ingest([server.streamURL]).all
        let folder = try AirtapBinary.temporaryFolder()
        let station = Station(id: "tones", name: "Tones FM", urls: [server.streamURL])
        let keeper = SongKeeper { wholeTrack in
            let recorder = TrackRecorder(station: station, options: RecordingOptions(outputDirectory: folder.path),
                                         logger: Logger(label: "test")) { _ in }
            if wholeTrack { recorder.startsAtTrackBoundary() }
            return QueuedSink(recorder, label: "save")
        }
        // Replay the stream; press s halfway through the second title (track number 2).
        var titles = 0, packetsOfSecond = 0
        for event in events {
            try keeper.receive(event)
            if case .metadata = event { titles += 1 }
            if case .packet = event, titles == 2 {
                packetsOfSecond += 1
                if packetsOfSecond == 20 { #expect(try keeper.save(trackNumber: 2) == .started(TrackInfo(streamTitle: "Tone B - 554", url: server.configuration.stationURL))) }
            }
        }
        keeper.finish()
        let files = filesBelow(folder)
        #expect(files == ["Tones FM/Tone B - 554.mp3"], "\(files)")
        let saved = try RecordedFileContents(path: folder.appendingPathComponent("Tones FM/Tone B - 554.mp3").path)
        // Exactly the packets between the second and the third title.
        var inSecond = false
        var expected: [UInt8] = []
        titles = 0
        for event in events {
            if case .metadata = event { titles += 1; inSecond = titles == 2 }
            if case .packet(let packet) = event, inSecond { expected += packet.bytes }
        }
        #expect(saved.audio == expected)
        #expect(saved.tag?.title == "554")
    }
}

@Suite("Play: save this song beside the stream")
struct SaveSongBesideStreamTests {
    @Test("A save makes its recorder while the stream goes on (a slow disk never holds up the ingest thread)")
    func recorderMadeBesideTheStream() async throws {
        let events = try await tonesWithSilences()
        let (keeper, folder, entered, release) = try Self.keeperMakingRecordersSlowly(search: nil)
        // s is pressed 20 packets into track 3; its recorder is made while the rest arrives.
        var titles = 0, packets = 0
        let pressed = try #require(events.firstIndex { event in
            if case .metadata = event { titles += 1; packets = 0 }
            if case .packet = event, titles == 3 { packets += 1 }
            return packets == 20
        })
        for event in events[...pressed] { try keeper.receive(event) }
        let saved = Locked<SongKeeper.SaveResult?>(nil)
        let saving = DispatchGroup()
        DispatchQueue.global().async(group: saving) { saved.withLock { $0 = try? keeper.save(trackNumber: 3) } }
        #expect(entered.wait(timeout: .now() + 60) == .success)
        let streaming = DispatchGroup()
        DispatchQueue.global().async(group: streaming) {
            for event in events[(pressed + 1)...] { try? keeper.receive(event) }
        }
        let streamWentOn = streaming.wait(timeout: .now() + 60) == .success
        release.signal()
        #expect(streamWentOn, "the stream waited for the recorder")
        #expect(saving.wait(timeout: .now() + 60) == .success)
        keeper.finish()
        guard case .started(let info) = saved.withLock({ $0 }) else { Issue.record("not started"); return }
        let title = try #require(events.compactMap { event -> String? in
            if case .metadata(let change) = event { change.info.raw } else { nil }
        }.dropFirst(2).first)
        #expect(info?.raw == title)
        // Every packet of track 3, those that arrived while its recorder was made among them.
        var expected: [UInt8] = []
        titles = 0
        for event in events {
            if case .metadata = event { titles += 1 }
            if case .packet(let packet) = event, titles == 3 { expected += packet.bytes }
        }
        #expect(filesBelow(folder) == ["Tones FM/\(title).mp3"], "\(filesBelow(folder))")
        let file = try RecordedFileContents(path: folder.appendingPathComponent("Tones FM/\(title).mp3").path)
        #expect(!expected.isEmpty)
        #expect(file.audio == expected)
    }
}

extension SaveSongBesideStreamTests {
    /// A keeper whose saves signal `entered` as they make their recorder, then wait for `release`.
    static func keeperMakingRecordersSlowly(search: SplitOptions?) throws
        -> (SongKeeper, URL, entered: DispatchSemaphore, release: DispatchSemaphore) {
        let folder = try AirtapBinary.temporaryFolder()
        let station = Station(id: "tones", name: "Tones FM", urls: ["http://127.0.0.1:9/"])
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let keeper = savingKeeper(station, into: folder, search: search) {
            entered.signal()
            release.wait()
        }
        return (keeper, folder, entered, release)
    }

    @Test("A save whose recorder is still being made when play leaves the station is refused, and leaves no file")
    func finishWhileMakingRecorder() async throws {
        let events = try await tonesWithSilences()
        let (keeper, folder, entered, release) = try Self.keeperMakingRecordersSlowly(search: .standard)
        for event in events.prefix(events.count / 2) { try keeper.receive(event) }
        let saved = Locked<SongKeeper.SaveResult?>(nil)
        let saving = DispatchGroup()
        DispatchQueue.global().async(group: saving) { saved.withLock { $0 = try? keeper.save(trackNumber: 1) } }
        #expect(entered.wait(timeout: .now() + 60) == .success)
        keeper.finish()
        release.signal()
        #expect(saving.wait(timeout: .now() + 60) == .success)
        #expect(saved.withLock { $0 } == .unavailable)
        #expect(filesBelow(folder).isEmpty, "\(filesBelow(folder))")
    }

    @Test("Saved before the first title, the audio we tuned in to is named by that title and ends at the next cut, as a recording's first file")
    func saveBeforeFirstTitle() async throws {
        let events = try await tonesWithSilences()
        let folder = try AirtapBinary.temporaryFolder()
        let station = Station(id: "tones", name: "Tones FM", urls: ["http://127.0.0.1:9/"])
        let keeper = savingKeeper(station, into: folder, search: .standard)
        var result: SongKeeper.SaveResult?
        for event in events {
            if result == nil, case .packet = event { result = try keeper.save(trackNumber: 0) }
            try keeper.receive(event)
        }
        keeper.finish()
        #expect(result == .started(nil))
        // A recording of the stream: its first file is the same song, with the same audio.
        let files = try expectSavedAsRecorded(folder, events: events, station: station)
        #expect(files.count == 1, "\(files)")
    }
}

@Suite("Play: save this song, cut in the gap")
struct SaveSongSplitTests {
    /// A gap 2 s before B's title, and one 0.05 s before it (within the metadata interval: the
    /// title then announces what plays after the gap).
    @Test("With a gap before the song's title, the saved file is the one a recording writes: whole when the title comes well after the gap, incomplete when it announces what plays",
          arguments: [2.0, 0.05])
    func gapBeforeTitle(secondsBefore: Double) async throws {
        var events = try await Self.stationWithHead()
        let thirdTitle = try #require(events.indices.filter { if case .metadata = events[$0] { true } else { false } }.dropFirst(2).first)
        var gapAt = thirdTitle, seconds = 0.0
        while seconds < secondsBefore, gapAt > 0 {
            gapAt -= 1
            if case .packet(let packet) = events[gapAt] { seconds += packet.duration }
        }
        guard case .packet(let afterGap) = events[gapAt] else { Issue.record("no packet at the gap"); return }
        events.insert(.discontinuity(position: afterGap.position), at: gapAt)

        let files = try Self.saveAndRecord(events, track: 3, title: "Tones - B")
        #expect(files.count == 1, "\(files)")
        #expect(files.first?.contains("incomplete/") == (secondsBefore < 0.1), "\(files)")
    }

    @Test("A gap inside the song, the station announcing it again just after: the save runs on to the next title, in the files a recording writes")
    func gapInsideSong() async throws {
        var events = try await Self.stationWithHead()
        let titleIndices = events.indices.filter { if case .metadata = events[$0] { true } else { false } }
        let (third, fourth) = (titleIndices[2], titleIndices[3])
        // A quarter into B: no silence within the search's window of the second announcement.
        let gapAt = third + (fourth - third) / 4
        guard case .packet(let afterGap) = events[gapAt], case .metadata(let b) = events[third] else {
            Issue.record("no packet at the gap")
            return
        }
        events.insert(contentsOf: [.discontinuity(position: afterGap.position)], at: gapAt)
        events.insert(.metadata(TrackChange(info: b.info, position: afterGap.position + 400, source: .icy)), at: gapAt + 3)
        let files = try Self.saveAndRecord(events, track: 3, title: "Tones - B")
        #expect(files.count == 2, "the song before the gap, and after it: \(files)")
    }

    /// `tonesWithSilences`, after a connection's head (metadata every 2000 bytes).
    static func stationWithHead() async throws -> [StreamEvent] {
        let response = try ResponseHead.parse(statusLine: "HTTP/1.0 200 OK",
                                              headerLines: ["Content-Type: audio/mpeg", "icy-metaint: 2000"])
        return [.head(StreamHead(response: response, url: "http://127.0.0.1:9/"))] + (try await tonesWithSilences())
    }

    /// Saves `track` with the standard search, s pressed just after its title, and records the
    /// whole stream: every saved file is one of the recording's, with the same audio.
    static func saveAndRecord(_ events: [StreamEvent], track: Int, title: String) throws -> [String] {
        let station = Station(id: "tones", name: "Tones FM", urls: ["http://127.0.0.1:9/"])
        let folder = try AirtapBinary.temporaryFolder()
        let keeper = savingKeeper(station, into: folder, search: .standard)
        var rawTitles = 0, result: SongKeeper.SaveResult?
        for event in events {
            try keeper.receive(event)
            if case .metadata = event { rawTitles += 1 }
            if result == nil, rawTitles == track, case .packet = event { result = try keeper.save(trackNumber: track) }
        }
        keeper.finish()
        guard case .started(let info) = result else {
            Issue.record("\(String(describing: result))")
            return []
        }
        #expect(info?.raw == title)

        let files = try expectSavedAsRecorded(folder, events: events, station: station)
        for file in files { #expect(file.contains(title), "\(file)") }
        return files
    }

    /// When s is pressed: as B's title arrives, just after C's (before a search can place it),
    /// and once C's cut is decidable; with the standard search, and with padding and an offset.
    @Test("s saves the song from the cut in the gap to the next one, the cut a recording makes, whenever it is pressed",
          arguments: [(3, 1), (4, 10), (4, 150)], [SplitOptions.standard, SplitOptions(offset: -0.4, paddingPrevious: 0.3, paddingNext: 0.5)])
    func saveCutInTheGap(pressedAt: (title: Int, packet: Int), options: SplitOptions) async throws {
        // Titles 0.9 s late, 1.5 s of silence between the tracks: a recording cuts in the silence.
        let events = try await tonesWithSilences()
        let folder = try AirtapBinary.temporaryFolder()
        let station = Station(id: "tones", name: "Tones FM", urls: ["http://127.0.0.1:9/"])
        let keeper = savingKeeper(station, into: folder, search: options)
        // The first block names the track playing when we tuned in (D: the program loops), then A,
        // then B, track number 3.
        var rawTitles = 0, packetsSinceTitle = 0
        var result: SongKeeper.SaveResult?
        for event in events {
            try keeper.receive(event)
            if case .metadata = event { rawTitles += 1; packetsSinceTitle = 0 }
            if case .packet = event { packetsSinceTitle += 1 }
            if result == nil, rawTitles == pressedAt.title, packetsSinceTitle == pressedAt.packet {
                result = try keeper.save(trackNumber: 3)
            }
        }
        keeper.finish()
        guard case .started(let info) = result else { Issue.record("\(String(describing: result))"); return }
        #expect(info?.raw == "Tones - B")

        let aligned = try align(events, options).0
        let raw = SplitOutcome(events: events)
        let cut = try #require(aligned.title("Tones - B")).position
        #expect(cut != raw.title("Tones - B")?.position, "the cut moved into the silence")
        // The saved file: exactly the packets between the aligned third and fourth titles; no other file.
        #expect(filesBelow(folder) == ["Tones FM/Tones - B.mp3"], "\(filesBelow(folder))")
        let saved = try RecordedFileContents(path: folder.appendingPathComponent("Tones FM/Tones - B.mp3").path)
        var expected: [UInt8] = []
        var count = 0
        for event in aligned.events {
            if case .metadata = event { count += 1 }
            if case .packet(let packet) = event, count == 3 { expected += packet.bytes }
        }
        #expect(!expected.isEmpty)
        #expect(saved.audio == expected)
    }
}

/// Four tones with 1.5 s of silence between them, titles 0.9 s late: a recording cuts in the silences.
private func tonesWithSilences() async throws -> [StreamEvent] {
    let titles = ["Tones - A", "Tones - B", "Tones - C", "Tones - D"]
    let configuration = StationConfiguration(metaint: 2000, trackSeconds: 8, gapSeconds: 1.5, metaOffsetSeconds: 0.9,
                                             titles: titles)
    let program = try await encode(configuration)
    return stationEvents(configuration, program: program, seconds: program.loopSeconds)
}

/// A song keeper whose saves go to `folder` as `record` writes them, cut by the split search
/// (at the titles without one). `makingRecorder` runs as each save makes its recorder.
private func savingKeeper(_ station: Station, into folder: URL, search: SplitOptions?,
                          makingRecorder: @escaping @Sendable () -> Void = {}) -> SongKeeper {
    SongKeeper(cutSearch: search.flatMap { SongKeeper.CutSearch($0, logger: Logger(label: "split")) }) { wholeTrack in
        makingRecorder()
        let recorder = TrackRecorder(station: station, options: RecordingOptions(outputDirectory: folder.path),
                                     logger: Logger(label: "test")) { _ in }
        if wholeTrack { recorder.startsAtTrackBoundary() }
        return QueuedSink(recorder, label: "save")
    }
}

/// Records `events` whole as `record` does (the standard search), and expects every file saved
/// in `folder` to be one of that recording's, with the same audio. Returns the saved files.
private func expectSavedAsRecorded(_ folder: URL, events: [StreamEvent], station: Station) throws -> [String] {
    let recorded = try AirtapBinary.temporaryFolder()
    let recorder = TrackRecorder(station: station, options: RecordingOptions(outputDirectory: recorded.path),
                                 logger: Logger(label: "test")) { _ in }
    let aligner = SplitAligner(recorder, options: .standard, logger: Logger(label: "split"))
    for event in events { try aligner.receive(event) }
    let files = filesBelow(folder)
    for file in files {
        guard filesBelow(recorded).contains(file) else {
            Issue.record("\(file) not among \(filesBelow(recorded))")
            continue
        }
        let saved = try RecordedFileContents(path: folder.appendingPathComponent(file).path)
        let original = try RecordedFileContents(path: recorded.appendingPathComponent(file).path)
        #expect(!saved.audio.isEmpty)
        let same = saved.audio == original.audio
        #expect(same, "\(file): saved \(saved.audio.count) bytes, recorded \(original.audio.count)")
    }
    return files
}
