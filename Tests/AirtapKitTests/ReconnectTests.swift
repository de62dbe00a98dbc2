@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapStations
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
import SplitFixtures
@testable import TestStation
import Testing

@Suite("Reconnect policy")
struct ReconnectPolicyTests {
    /// A generator that always gives the same numbers, so delays are exact without jitter.
    struct Fixed: RandomNumberGenerator {
        mutating func next() -> UInt64 { 0 }
    }

    func delays(_ policy: ReconnectPolicy, failures: [(ReconnectPolicy.Failure, Double)]) -> [ReconnectPolicy.Decision] {
        var progress = ReconnectPolicy.Progress()
        var random = Fixed()
        return failures.map { policy.decide(after: $0.0, streamedFor: $0.1, progress: &progress, random: &random) }
    }

    @Test("1 s, doubling, capped at 60 s")
    func backoff() {
        let policy = ReconnectPolicy(jitter: 0)
        let decisions = delays(policy, failures: Array(repeating: (.transient, 0), count: 9))
        #expect(decisions == [1, 2, 4, 8, 16, 32, 60, 60, 60].enumerated().map { .retry(attempt: $0.offset + 1, after: $0.element) })
    }

    @Test("A minute of good streaming resets the backoff")
    func reset() {
        let decisions = delays(ReconnectPolicy(jitter: 0), failures: [(.transient, 0), (.transient, 5), (.transient, 61), (.transient, 0)])
        #expect(decisions == [.retry(attempt: 1, after: 1), .retry(attempt: 2, after: 2), .retry(attempt: 1, after: 1), .retry(attempt: 2, after: 2)])
    }

    @Test("Client errors are retried three times, then given up")
    func clientErrors() {
        let decisions = delays(ReconnectPolicy(jitter: 0), failures: Array(repeating: (.clientError, 0), count: 4))
        #expect(decisions.last == .giveUp)
        #expect(decisions.dropLast().allSatisfy { $0 != .giveUp })
    }

    @Test("--retries limits the attempts; 0 never retries")
    func limit() {
        #expect(delays(ReconnectPolicy(maxRetries: 0), failures: [(.transient, 0)]) == [.giveUp])
        let two = delays(ReconnectPolicy(maxRetries: 2, jitter: 0), failures: Array(repeating: (.transient, 0), count: 3))
        #expect(two == [.retry(attempt: 1, after: 1), .retry(attempt: 2, after: 2), .giveUp])
    }

    @Test("Jitter stays within ±20 % and varies")
    func jitter() {
        var random = SplitMix64(seed: 7)
        let policy = ReconnectPolicy()
        var seen = Set<Double>()
        for _ in 0..<200 {
            var progress = ReconnectPolicy.Progress()
            guard case .retry(_, let delay) = policy.decide(after: .transient, streamedFor: 0, progress: &progress, random: &random) else {
                Issue.record("gave up")
                return
            }
            #expect(delay >= 0.8 && delay <= 1.2)
            seen.insert(delay)
        }
        #expect(seen.count > 100)
    }
}

@Suite("Splice after a reconnect")
struct SpliceTests {
    static let frames: [ArraySlice<UInt8>] = {
        let program = Programs.short
        return (0..<200).map { index in
            let start = program.streamOffset(ofFrame: index), end = program.streamOffset(ofFrame: index + 1)
            return ArraySlice(program.audio(from: start, count: end - start))
        }
    }()

    /// Feeds frames [0, dropAt), reconnects, feeds [resumeAt, 200); returns the verdicts after the reconnect.
    func run(dropAt: Int, resumeAt: Int, tailLimitBytes: Int = 256 * 1024) -> (kept: [Int], verdicts: [SpliceDetector.Verdict]) {
        var detector = SpliceDetector(tailLimitBytes: tailLimitBytes)
        var kept: [Int] = []
        for index in 0..<dropAt {
            #expect(detector.classify(Self.frames[index]) == .new)
            kept.append(index)
        }
        detector.reconnected()
        var verdicts: [SpliceDetector.Verdict] = []
        for index in resumeAt..<200 {
            let verdict = detector.classify(Self.frames[index])
            verdicts.append(verdict)
            if verdict != .duplicate { kept.append(index) }
        }
        return (kept, verdicts)
    }

    @Test("A burst that reaches back before the drop: repeated frames dropped, no gap, no duplicate")
    func overlap() {
        let (kept, verdicts) = run(dropAt: 120, resumeAt: 80)
        #expect(kept == Array(0..<200))
        #expect(verdicts.prefix(40).allSatisfy { $0 == .duplicate })
        #expect(verdicts[40] == .spliced)
        #expect(!verdicts.contains(.discontinuity))
    }

    @Test("A new connection that starts after the drop: a discontinuity, nothing dropped")
    func gap() {
        let (kept, verdicts) = run(dropAt: 120, resumeAt: 150)
        #expect(kept == Array(0..<120) + Array(150..<200))
        #expect(verdicts.first == .discontinuity)
        #expect(verdicts.dropFirst().allSatisfy { $0 == .new })
    }

    @Test("A burst that starts exactly after the last frame received is a seamless continuation")
    func exact() {
        let (kept, verdicts) = run(dropAt: 120, resumeAt: 119)
        #expect(kept == Array(0..<200))
        #expect(verdicts.first == .duplicate)
        #expect(verdicts[1] == .spliced)
    }

    @Test("A tail that has wrapped round its ring still splices, frames across the wrap included")
    func wrappedRing() {
        // Room for about ten frames, at an offset that puts frame boundaries anywhere in the ring.
        let limit = Self.frames[0..<10].reduce(0) { $0 + $1.count } + 137
        let (kept, verdicts) = run(dropAt: 120, resumeAt: 112, tailLimitBytes: limit)
        #expect(kept == Array(0..<200))
        #expect(verdicts.prefix(8) == ArraySlice(repeating: .duplicate, count: 8))
        #expect(verdicts[8] == .spliced)
    }

    @Test("A burst that reaches back further than the tail: a discontinuity (the repeats are kept, not guessed at)")
    func burstBeyondTheTail() {
        let limit = Self.frames[0..<10].reduce(0) { $0 + $1.count } + 137
        let (kept, verdicts) = run(dropAt: 120, resumeAt: 100, tailLimitBytes: limit)
        #expect(verdicts.first == .discontinuity)
        #expect(kept == Array(0..<120) + Array(100..<200))
    }

    @Test("A burst that diverges part-way: the repeats are dropped, the rest marked as a gap")
    func divergence() {
        var detector = SpliceDetector()
        for index in 0..<120 { _ = detector.classify(Self.frames[index]) }
        detector.reconnected()
        #expect(detector.classify(Self.frames[100]) == .duplicate)
        #expect(detector.classify(Self.frames[101]) == .duplicate)
        #expect(detector.classify(Self.frames[160]) == .discontinuity)
        #expect(detector.classify(Self.frames[161]) == .new)
    }

    @Test("A frame that differs from the expected repeat in its header, side info, a sampled word or its last byte is no repeat")
    func nearRepeats() {
        let sampled = SpliceDetector.headBytes + 2 * SpliceDetector.sampleStride
        for changed in [0, 12, SpliceDetector.headBytes - 1, sampled, Self.frames[101].count - 1] {
            var detector = SpliceDetector()
            for index in 0..<120 { _ = detector.classify(Self.frames[index]) }
            detector.reconnected()
            #expect(detector.classify(Self.frames[100]) == .duplicate)
            var altered = Array(Self.frames[101])
            altered[changed] ^= 0x01
            #expect(detector.classify(altered[...]) == .discontinuity, "byte \(changed)")
        }
        // A frame too short to sample is read whole: any byte tells it apart.
        let short = (0..<200).map { index in ArraySlice((0..<50).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) }) }
        for changed in [0, 45, 49] {
            var detector = SpliceDetector()
            for index in 0..<120 { _ = detector.classify(short[index]) }
            detector.reconnected()
            #expect(detector.classify(short[100]) == .duplicate)
            var altered = Array(short[101])
            altered[changed] ^= 0x01
            #expect(detector.classify(altered[...]) == .discontinuity, "byte \(changed)")
        }
    }
}

/// `StreamSplice`: the session's joining of connections, without a socket.
@Suite("Joining connections into one stream")
struct StreamSpliceTests {
    static let packets = Programs.short.packets(count: 200)

    /// Connection positions start at 0 whatever the stream offset: as a new connection's do.
    static func connection(_ range: Range<Int>) -> [Packet] {
        let first = packets[range.lowerBound].position
        return packets[range].map { Packet(bytes: $0.bytes, position: $0.position - first, header: $0.header) }
    }

    @Test("A reconnect whose burst overlaps: repeated frames dropped, positions go on where the audio ended, one seamless join")
    func overlap() throws {
        var splice = StreamSplice()
        splice.connectionStarted()
        var out: [Packet] = []
        var joins: [StreamSplice.Join] = []
        func feed(_ packets: [Packet]) {
            for packet in packets {
                guard case .packet(let moved, let join) = splice.place(packet) else { continue }
                out.append(moved)
                if let join { joins.append(join) }
            }
        }
        feed(Self.connection(0..<120))
        #expect(splice.end == Self.packets[120].position)
        // A title the second connection announces at its own position 0 is at the join.
        splice.reconnecting()
        splice.connectionStarted()
        #expect(splice.position(ofConnectionPosition: 0) == Self.packets[120].position)
        feed(Self.connection(80..<200))
        #expect(out.map(\.position) == Self.packets.map(\.position))
        #expect(out.map { Array($0.bytes) } == Self.packets.map { Array($0.bytes) })
        #expect(joins == [.seamless(repeatedFrames: 40)])
        // From the first kept frame on, the second connection's positions map by one offset.
        let second = Self.connection(80..<200)
        #expect(splice.position(ofConnectionPosition: second[50].position) == Self.packets[130].position)
    }

    @Test("A reconnect that starts after the drop: a gap at the end of the first connection's audio, nothing dropped")
    func gap() {
        var splice = StreamSplice()
        splice.connectionStarted()
        for packet in Self.connection(0..<100) { _ = splice.place(packet) }
        let end = splice.end
        splice.reconnecting()
        splice.connectionStarted()
        var joins: [StreamSplice.Join] = []
        var positions: [Int] = []
        for packet in Self.connection(150..<200) {
            guard case .packet(let moved, let join) = splice.place(packet) else {
                Issue.record("a frame of the new connection was dropped")
                continue
            }
            positions.append(moved.position)
            if let join { joins.append(join) }
        }
        #expect(joins == [.gap(position: end, repeatedFrames: 0)])
        #expect(positions.first == end)
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 })
    }
}

/// `CandidateList`: which URLs a round of connecting tries, without a socket.
@Suite("Candidate URLs: fallbacks and playlists")
struct CandidateListTests {
    static func drain(_ list: inout CandidateList) -> [String] {
        var urls: [String] = []
        while case .connect(let candidate) = list.next() { urls.append(candidate.url) }
        return urls
    }

    @Test("The station's URLs in order; a playlist's entries go before the fallbacks left")
    func order() throws {
        var list = CandidateList(urls: ["http://a/list.pls", "http://b/stream"])
        guard case .connect(let playlist) = list.next() else { Issue.record("nothing to try"); return }
        #expect(playlist.url == "http://a/list.pls" && playlist.playlistDepth == 0)
        #expect(list.insert(entries: ["http://m1/s", "http://m2/s"], from: playlist) == 2)
        #expect(Self.drain(&list) == ["http://m1/s", "http://m2/s", "http://b/stream"])
        #expect(list.next() == .exhausted)
    }

    @Test("Credentials leave the URL every message shows and travel beside it")
    func credentials() {
        var list = CandidateList(urls: ["http://user:secret@host:8000/mount"])
        guard case .connect(let candidate) = list.next() else { Issue.record("nothing to try"); return }
        #expect(candidate.url == "http://host:8000/mount")
        #expect(candidate.credentials != nil)
    }

    @Test("Bounds: 16 entries per playlist, 3 playlists deep, 64 playlist entries per round")
    func bounds() {
        var list = CandidateList(urls: ["http://a/list.pls"])
        guard case .connect(var playlist) = list.next() else { Issue.record("nothing to try"); return }
        let many = (0..<4000).map { "http://h\($0)/list.pls" }
        // Nested playlists: each level takes 16 entries; the third level's playlists expand no further.
        for depth in 1...3 {
            #expect(list.insert(entries: many, from: playlist) == 16)
            guard case .connect(let next) = list.next() else { Issue.record("nothing at depth \(depth)"); return }
            #expect(next.playlistDepth == depth)
            playlist = next
        }
        #expect(!playlist.mayExpand)
        #expect(list.insert(entries: many, from: playlist) == 0)
        // 3 tried so far; the rest of the round's playlist entries run out at 64.
        var tried = 3
        while case .connect(let candidate) = list.next() {
            tried += 1
            if candidate.playlistDepth < 3 { list.insert(entries: many, from: candidate) }
        }
        #expect(tried == CandidateList.maxPlaylistEntriesPerRound)
        #expect(list.next() == .exhausted)
    }
}

@Suite("Reconnect over loopback")
struct ReconnectIntegrationTests {
    @Test("A dropped connection is retried; the gap becomes a discontinuity and a clean file boundary")
    func reconnectAfterDrop() async throws {
        // A live broadcast whose connections end after 1.5 s: the reconnect joins later, with a gap.
        var configuration = Programs.configuration(maxSeconds: 1.5)
        configuration.pace = .realtime
        configuration.startAtLive = true
        let server = try await TestStationServer.start(configuration, program: Programs.short)
        defer { Task { try? await server.stop() } }

        let folder = try AirtapBinary.temporaryFolder()
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let station = Station(id: "drop", name: "Drop FM", urls: [server.streamURL])
        let finished = FinishedTracks()
        let recorder = TrackRecorder(station: station, options: finished.collecting(RecordingOptions(outputDirectory: folder.path)),
                                     logger: Logger(label: "test")) { _ in }
        let events = CollectingSink()
        let writer = QueuedSink(recorder, label: "test")
        let policy = ReconnectPolicy(initialDelay: 0.5, maxRetries: 1, jitter: 0)
        let session = StationSession(station: station, loop: loop, options: IngestOptions(reconnect: policy),
                                     sinks: [writer, events], logger: Logger(label: "test"))
        session.start()
        #expect(await session.stopped() == .endOfStream)
        writer.drain()

        // The station counts a connection's bytes when its side has closed, which can be just after
        // the client saw the end: wait for that, or the count of the last one may still be 0.
        try await waitFor("the station's counts") { server.connections.allSatisfy(\.isClosed) }
        let connections = server.connections.filter { $0.startOffset != nil }
        #expect(connections.count == 2)
        #expect(events.heads.count == 2)
        let discontinuities = events.all.filter { if case .discontinuity = $0 { true } else { false } }
        #expect(discontinuities.count == 1)

        // Everything each connection delivered is on disk, in order, and nothing else.
        let expected = connections.flatMap { record in
            Programs.short.audio(from: record.startOffset ?? 0, count: record.audioBytesSent)
        }
        let files = try finished.all.map { try RecordedFileContents(path: $0.path) }
        #expect(files.flatMap(\.audio) == expected)
        // Positions stay contiguous across the two connections.
        let packets = events.packets
        #expect(zip(packets, packets.dropFirst()).allSatisfy { $0.byteRange.upperBound == $1.position })
        // No file spans the gap: the track before it and the one after it are both incomplete.
        #expect(finished.all.allSatisfy { !$0.isComplete })
    }
}

@Suite("Reconnect to a mount that comes back")
struct MountComesBackTests {
    @Test("After a station has streamed, a run of 404s (an Icecast mount without a source) is retried past the client-error limit")
    func notFoundWhileSourceIsAway() async throws {
        let audio = HostileStreamTests.frames(0..<40)
        let connections = Locked(0)
        let server = try await ScriptedServer.start { _ in
            let number = connections.withLock { value -> Int in
                value += 1
                return value
            }
            // 1: streams; 2...5: the source is away (404, more than the 3 client-error retries); 6: back.
            guard number == 1 || number == 6 else {
                return [.send(ScriptedServer.head("HTTP/1.0 404 File Not Found", ["Content-Type: text/html"])), .close]
            }
            return [.send(HostileStreamTests.head(metaint: nil)), .send(audio), .wait(seconds: 0.1), .close]
        }
        defer { Task { try? await server.stop() } }
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let events = CollectingSink()
        let policy = ReconnectPolicy(initialDelay: 0.05, maxRetries: 5, jitter: 0)
        let session = StationSession(station: Station(id: "mount", name: "Mount", urls: [server.url("/")]), loop: loop,
                                     options: IngestOptions(reconnect: policy), sinks: [events], logger: Logger(label: "test"))
        session.start()
        _ = await session.stopped()
        #expect(connections.withLock { $0 } == 6)
        #expect(events.heads.count == 2, "the station was heard again after four 404s")
    }
}

@Suite("Recording across a gap")
struct RecordingAcrossAGapTests {
    static let program = Programs.short
    static func packets(_ range: Range<Int>) -> [StreamEvent] {
        range.compactMap { index in
            let start = program.streamOffset(ofFrame: index)
            let bytes = program.audio(from: start, count: program.streamOffset(ofFrame: index + 1) - start)
            return MP3FrameHeader(bytes[...]).map { .packet(Packet(bytes: bytes[...], position: start, header: .mpeg($0))) }
        }
    }
    static func title(_ text: String, atFrame index: Int) -> StreamEvent {
        .metadata(TrackChange(info: TrackInfo(streamTitle: text), position: program.streamOffset(ofFrame: index), source: .icy))
    }
    static func head() throws -> StreamEvent {
        let response = try ResponseHead.parse(statusLine: "HTTP/1.0 200 OK",
                                              headerLines: ["Content-Type: audio/mpeg", "icy-metaint: 8000"])
        return .head(StreamHead(response: response, url: "http://127.0.0.1:9/"))
    }

    func record(_ events: [StreamEvent]) throws -> [String] {
        let folder = try AirtapBinary.temporaryFolder()
        // Tracks of a fraction of a second: every title a file, as the names under test need.
        var options = RecordingOptions(outputDirectory: folder.path)
        options.trackFloor = .none
        let recorder = TrackRecorder(station: Station(id: "gap", name: "Gap FM", urls: ["http://127.0.0.1:9/"]),
                                     options: options, logger: Logger(label: "test")) { _ in }
        for event in events { try recorder.receive(event) }
        return filesBelow(folder)
    }

    @Test("The song in progress goes on after the gap under its title; the next title cuts it (it was not swallowed into the partial file)")
    func titleCarriedAcrossTheGap() throws {
        // A (tuned in during it), B complete, gap in C, C resumes (its title is not announced
        // again: the same title is no change), D cuts, then the stop.
        var events = [try Self.head(), Self.title("A", atFrame: 0)] + Self.packets(0..<20)
        events += [Self.title("B", atFrame: 20)] + Self.packets(20..<40) + [Self.title("C", atFrame: 40)] + Self.packets(40..<60)
        events += [.discontinuity(position: Self.program.streamOffset(ofFrame: 60))] + Self.packets(60..<120)
        events += [Self.title("D", atFrame: 120)] + Self.packets(120..<140) + [.ended(.userRequest)]
        #expect(try record(events) == ["Gap FM/B.mp3", "Gap FM/incomplete/A.mp3", "Gap FM/incomplete/C (2).mp3",
                                       "Gap FM/incomplete/C.mp3", "Gap FM/incomplete/D.mp3"])
    }

    @Test("A new title in the reconnect's first block names the audio already playing, like a first connection")
    func announcementAfterTheGap() throws {
        var events = [try Self.head(), Self.title("A", atFrame: 0)] + Self.packets(0..<20) + [Self.title("B", atFrame: 20)]
        events += Self.packets(20..<40) + [.discontinuity(position: Self.program.streamOffset(ofFrame: 40))] + Self.packets(40..<45)
        // Within icy-metaint of the gap: the station says what plays now (E started during the gap).
        events += [Self.title("E", atFrame: 45)] + Self.packets(45..<100) + [Self.title("F", atFrame: 100)] + Self.packets(100..<120)
        events += [.ended(.userRequest)]
        #expect(try record(events) == ["Gap FM/incomplete/A.mp3", "Gap FM/incomplete/B.mp3", "Gap FM/incomplete/E.mp3",
                                       "Gap FM/incomplete/F.mp3"])
    }
}
