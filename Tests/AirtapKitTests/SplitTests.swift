@testable import AirtapCuts
@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapRecording
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
import SplitFixtures
@testable import TestStation
import Testing

// MARK: The choice, over made-up levels

@Suite("Split: choosing the cut")
struct SplitPointFinderTests {
    let finder = SplitPointFinder(silenceLevel: -50, minimumSilentFrames: 4)
    func levels(_ text: String) -> [Float] { text.map { $0 == "." ? -90 : $0 == "q" ? -30 : -10 } }

    @Test func withoutSilenceTheCutStaysAtTheReference() {
        #expect(finder.choose(levels: levels("xxxxxxxxxx"), reference: 3) == .init(boundary: 3, silence: nil))
        #expect(finder.choose(levels: [], reference: 0) == .init(boundary: 0, silence: nil))
        #expect(finder.choose(levels: levels("xxx"), reference: 99).boundary == 3)
        #expect(finder.choose(levels: levels("xxx"), reference: -5).boundary == 0)
    }

    @Test func quietIsNotSilentAndShortSilenceDoesNotCount() {
        #expect(finder.choose(levels: levels("xxqqqqqqqqxxx"), reference: 12).silence == nil)
        #expect(finder.choose(levels: levels("xx...xxxxxxx"), reference: 1).silence == nil)
    }

    @Test func theMiddleOfTheRunIsTheCut() {
        // frames 2..<8 are silent: boundary 5 is its middle, whether the reference is in it or not.
        #expect(finder.choose(levels: levels("xx......xxxx"), reference: 11) == .init(boundary: 5, silence: 2..<8))
        #expect(finder.choose(levels: levels("xx......xxxx"), reference: 3).boundary == 5)
        #expect(finder.choose(levels: levels("......xxxxxx"), reference: 9).boundary == 3)
    }

    @Test func theNearerSilenceWinsOverTheLongerOrQuieter() {
        let text = "..........xxxxxx....xxxxxxxx"  // a long run 0..<10, a short one 16..<20
        #expect(finder.choose(levels: levels(text), reference: 21).silence == 16..<20)
        #expect(finder.choose(levels: levels(text), reference: 12).silence == 0..<10)
        var quieter = levels(text)
        for index in 16..<20 { quieter[index] = -120 }
        #expect(finder.choose(levels: quieter, reference: 12).silence == 0..<10)
        // Equally near (3 frames each side): the quieter one, then the earlier one.
        #expect(finder.choose(levels: quieter, reference: 13).silence == 16..<20)
        #expect(finder.choose(levels: levels("....xxxxxx...."), reference: 7).silence == 0..<4)
    }

    @Test func theSilenceThePreviousCutUsedIsNotAGapAgain() {
        let text = "......xxxxxxxxxxx"  // the window starts in the previous title's gap
        #expect(finder.choose(levels: levels(text), reference: 14).silence == 0..<6)
        #expect(finder.choose(levels: levels(text), reference: 14, taken: 0..<3) == .init(boundary: 14, silence: nil))
        #expect(finder.choose(levels: levels("x....xxxx....x"), reference: 4, taken: 0..<2).silence == 9..<13)
        #expect(finder.choose(levels: levels("x....xxxx....x"), reference: 4, taken: 5..<9).silence == 1..<5)
        // Beyond the taken frames, what is left of the run still counts when it is long enough.
        #expect(finder.choose(levels: levels("x..........xxx"), reference: 13, taken: 0..<5).silence == 5..<11)
    }

    @Test func measuringOutwardGivesTheAnswerOfMeasuringEverything() {
        // Seeded patterns of runs (silent, quiet, loud), references and taken ranges: the outward
        // search must choose exactly what `choose` chooses over all levels, and never measure a
        // frame twice or outside the window.
        var random = SplitMix64(seed: 0x5EA5C4)
        var measuredSome = 0
        for _ in 0..<4000 {
            let count = Int.random(in: 0...90, using: &random)
            var all: [Float] = []
            while all.count < count {
                let level: Float = [-90, -120, -30, -10].randomElement(using: &random) ?? -10
                all += repeatElement(level, count: Int.random(in: 1...12, using: &random))
            }
            all.removeLast(all.count - count)
            let reference = Int.random(in: -2...(count + 2), using: &random)
            let taken: Range<Int>? = Bool.random(using: &random) ? nil : {
                let start = Int.random(in: 0...count, using: &random)
                return start..<min(count, start + Int.random(in: 0...10, using: &random))
            }()
            let step = Int.random(in: 1...20, using: &random) * (Int.random(in: 0..<50, using: &random) == 0 ? Int.max / 40 : 1)
            var seen = [Bool](repeating: false, count: count)
            var twice = false
            var levels: [Float] = []
            let outward = finder.chooseMeasuringOutward(count: count, reference: reference, taken: taken, step: step,
                                                        levels: &levels) { range, levels in
                for index in range {
                    twice = twice || seen[index]
                    seen[index] = true
                    levels[index] = all[index]
                }
                return true
            }
            #expect(outward == finder.choose(levels: all, reference: reference, taken: taken),
                    "levels \(all), reference \(reference), taken \(String(describing: taken)), step \(step)")
            #expect(!twice)
            if seen.contains(false) { measuredSome += 1 }
        }
        // The point of it: most windows are decided before they are all measured.
        #expect(measuredSome > 1000)
        // A frame that cannot be measured ends the search.
        var levels: [Float] = []
        #expect(finder.chooseMeasuringOutward(count: 10, reference: 5, step: 2, levels: &levels) { _, _ in false } == nil)
    }

    @Test func silenceLengthRoundsUpToWholeFrames() {
        let frame = 1152.0 / 44100
        #expect(SplitPointFinder(options: .standard, frameSeconds: frame).minimumSilentFrames == 12)  // 300 ms / 26.1 ms = 11.5
        #expect(SplitPointFinder(options: SplitOptions(silenceLength: 10 * frame), frameSeconds: frame).minimumSilentFrames == 10)
    }

    @Test func optionsParseAndValidate() throws {
        #expect(try SplitOptions.parseWindow("3:3") == (3, 3))
        #expect(try SplitOptions.parseWindow("1500ms:4s") == (1.5, 4))
        #expect(try SplitOptions.parsePadding("500:0") == (0.5, 0))
        #expect(try SplitOptions.parseOffset("-1500") == -1.5)
        #expect(try SplitOptions.parseOffset("+2s") == 2)
        for bad in ["3", "a:b", "-1:3", ":", "3:3:3"] { #expect(throws: AirtapError.self) { try SplitOptions.parseWindow(bad) } }
        #expect(throws: AirtapError.self) { try SplitOptions.parseOffset("soon") }
        #expect(throws: AirtapError.self) { try SplitOptions(windowBefore: 31).validate() }
        #expect(throws: AirtapError.self) { try SplitOptions(silenceLevel: 3).validate() }
        #expect(throws: AirtapError.self) { try SplitOptions(paddingNext: -1).validate() }
        try SplitOptions.standard.validate()
    }

    @Test func aStationsSplitOffsetIsInMilliseconds() throws {
        let json = #"{ "id": "late", "url": "http://x/", "splitOffsetMs": -1500 }"#
        let station = try JSONDecoder().decode(Station.self, from: Data(json.utf8))
        #expect(station.splitOffset == -1.5)
        let again = try JSONDecoder().decode(Station.self, from: JSONEncoder().encode(station))
        #expect(again == station)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Station.self, from: Data(#"{ "id": "x", "url": "u", "splitOffsetMs": 90000 }"#.utf8))
        }
    }
}

// MARK: The aligner's bookkeeping, with made-up levels

@Suite("Split: the aligner's event stream")
struct SplitAlignerTests {
    static let program = Programs.short  // 4 tracks of 3 s tone, no gaps
    var frame: Double { Self.program.frameSeconds }
    /// The user's window alone: no title delay learned or used (which reads further while it
    /// learns: `titleDelayIsLearnedFromSilencesBeyondTheWindow`).
    static let aroundTheTitle = { var options = SplitOptions.standard; options.titleDelay = .off; return options }()
    func position(_ frame: Int) -> Int { Self.program.streamOffset(ofFrame: frame) }

    /// Frames `silent` read as -90 dBFS, the rest as -10.
    func meter(silent: Range<Int>) -> ScriptedMeter {
        let silentPositions = Set(silent.map { Self.program.streamOffset(ofFrame: $0) })
        return ScriptedMeter { silentPositions.contains($0) ? -90 : -10 }
    }

    @Test func passThroughChangesNothing() throws {
        let events = programEvents(Self.program, frames: 300, titles: [(position(100), "B"), (position(200), "C")])
        let (out, _) = try align(events, SplitOptions(searchesSilence: false), meter: meter(silent: 0..<0))
        #expect(out.events.count == events.count)
        #expect(out.files == SplitOutcome(events: events).files)
    }

    @Test func packetsWaitForTheWindowBeforeTheNewestOne() throws {
        let sink = CollectingSink()
        let aligner = SplitAligner(sink, options: Self.aroundTheTitle, logger: Logger(label: "t"), meter: meter(silent: 0..<0))
        let events = programEvents(Self.program, frames: 400, titles: [])
        for event in events.prefix(400) { try aligner.receive(event) }
        // 400 frames = 10.45 s; 3 s window + 0.5 s priming stay held.
        let held = 400 - sink.packets.count
        #expect(held == Int(((3.5) / frame).rounded(.up)) || held == Int((3.5 / frame).rounded(.up)) + 1)
        try aligner.receive(.ended(.limitReached))
        #expect(sink.packets.map(\.position) == (0..<400).map(position))
        if case .ended(.limitReached) = sink.all.last {} else { Issue.record("ended must come last") }
    }

    @Test("Audio that claims no duration (Ogg pages of a hostile station) is held only up to a bound in bytes, then goes on, its title decided")
    func zeroDurationAudioIsBoundedByBytes() throws {
        let sink = CollectingSink()
        let aligner = SplitAligner(sink, options: .standard, logger: Logger(label: "t"), meter: meter(silent: 0..<0))
        let page = 4096
        let header = AudioFrameHeader.oggPage(OggPageHeader(
            codec: .vorbis, sampleRate: 44100, channels: 2, nominalBitrate: nil, linkNumber: 0, kind: .audio,
            isLinkStart: false, pageLength: page, granulePosition: 0, samples: 0))
        let bound = SplitAlignerCore.maximumHeldBytes / page
        let count = 3 * bound
        for index in 0..<count {
            if index == 10 {
                try aligner.receive(.metadata(TrackChange(info: TrackInfo(streamTitle: "B"), position: index * page, source: .icy)))
            }
            try aligner.receive(.packet(Packet(bytes: ArraySlice(repeating: 0, count: page), position: index * page, header: header)))
            if index % 512 == 511 { #expect(index + 1 - sink.packets.count <= bound + 1, "held past the bound at packet \(index)") }
        }
        #expect(sink.titles.map(\.info.title) == ["B"])
        try aligner.receive(.ended(.endOfStream))
        #expect(sink.packets.map(\.position) == (0..<count).map { $0 * page })
    }

    @Test func theTitleMovesIntoTheSilenceAndEveryFrameStaysOnce() throws {
        // Title at frame 200; frames 170..<186 silent (16 frames, 0.42 s): the cut is frame 178.
        let events = programEvents(Self.program, frames: 400, titles: [(position(200), "B")])
        let (out, statistics) = try align(events, .standard, joinsMidTrack: true, meter: meter(silent: 170..<186))
        #expect(statistics.titleChanges == 1 && statistics.moved == 1 && statistics.inSilence == 1)
        #expect(out.files.map(\.count) == [178, 222])
        #expect(out.packets.map(\.position) == (0..<400).map(position))
        #expect(out.title("B")?.position == position(178))
        #expect(out.title("B")?.announcedPosition == position(200))
    }

    @Test func theWindowIsWhatTheOptionsSay() throws {
        // A made-up meter that records what it was asked: without a silence, all of 3 s + 3 s
        // around frame 200, a step at a time outward from the title, each step primed by the
        // frames just before it.
        final class Box: Sendable { let calls = Locked<[(priming: [Int], frames: [Int])]>([]) }
        struct Spy: FrameLevelMeter {
            let box: Box
            mutating func measure(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into levels: inout [Float]) -> Bool {
                box.calls.withLock { $0.append((priming.map(\.position), frames.map(\.position))) }
                levels = frames.map { _ in -10 }
                return true
            }
        }
        let box = Box()
        let events = programEvents(Self.program, frames: 500, titles: [(position(200), "B")])
        _ = try align(events, Self.aroundTheTitle, joinsMidTrack: true, meter: Spy(box: box))
        let calls = box.calls.withLock { $0 }
        let perSide = Int((3 / frame).rounded(.down))
        let window = (200 - perSide..<200 + perSide).map(position)
        let step = Int((0.5 / frame).rounded(.up))
        #expect(calls.count > 2)
        #expect(calls.flatMap(\.frames).sorted() == window)
        for call in calls {
            // Primed by the frames just before it, oldest first, contiguous with it.
            let first = try #require(call.frames.first.flatMap { Self.program.frameOffsets.firstIndex(of: $0) })
            #expect(call.priming.count >= 3)
            #expect(call.priming == (first - call.priming.count..<first).map(position))
        }
        // The first step is the title's own neighbourhood: half a second on each side.
        #expect(calls.prefix(2).flatMap(\.frames).sorted() == (200 - step..<200 + step).map(position))
    }

    @Test func theFirstTitleOfAStreamJoinedColdIsNotSearched() throws {
        // It names the song already playing, which the recorders name rather than cut: the gap
        // next to it is not measured, the one next to the title after it is.
        let silent = Set((185..<198).map(position) + (385..<398).map(position))
        let measured = Locked<[Int]>([])
        let meter = ScriptedMeter { position in
            measured.withLock { $0.append(position) }
            return silent.contains(position) ? -90 : -10
        }
        let events = programEvents(Self.program, frames: 600, titles: [(position(200), "B"), (position(400), "C")])
        let (out, statistics) = try align(events, .standard, meter: meter)
        #expect(out.title("B")?.position == position(200))
        #expect(out.title("B")?.placement?.reason == .title)
        #expect(out.title("C")?.position == position(391))
        #expect(statistics.titleChanges == 2 && statistics.inSilence == 1)
        #expect(measured.withLock { $0 }.allSatisfy { $0 > position(300) }, "only the second title's window is measured")
        #expect(out.packets.map(\.position) == (0..<600).map(position))
    }

    @Test func aGapNearTheTitleIsFoundWithoutDecodingTheWholeWindow() throws {
        // Title at frame 200, a gap just before it (185..<198): the cut is the same as with the
        // whole window measured, and at most the gap plus a step on each side was measured.
        let events = programEvents(Self.program, frames: 500, titles: [(position(200), "B")])
        let (out, statistics) = try align(events, .standard, joinsMidTrack: true, meter: meter(silent: 185..<198))
        #expect(out.title("B")?.position == position(191))
        #expect(statistics.inSilence == 1)
        let window = 2 * Int((3 / frame).rounded(.down))
        #expect(statistics.measuredFrames < window / 2)
    }

    @Test func anOffsetMovesTheReferenceBeforeTheSearch() throws {
        let events = programEvents(Self.program, frames: 400, titles: [(position(200), "B")])
        let late = try align(events, SplitOptions(searchesSilence: false, offset: -1.0)).0
        #expect(late.title("B")?.position == position(200 - Int((1.0 / frame).rounded())))
        let early = try align(events, SplitOptions(searchesSilence: false, offset: 0.5)).0
        #expect(early.title("B")?.position == position(200 + Int((0.5 / frame).rounded())))
        #expect(late.packets.map(\.position) == (0..<400).map(position))
        #expect(early.packets.map(\.position) == (0..<400).map(position))
    }

    @Test func titlesCloseTogetherKeepTheirOrder() throws {
        // Silence at 150..<170 is nearest both titles (180, 190): the first takes it, the second
        // cannot cut before the first and stays at its own position.
        let events = programEvents(Self.program, frames: 400, titles: [(position(180), "B"), (position(190), "C")])
        let out = try align(events, .standard, joinsMidTrack: true, meter: meter(silent: 150..<170)).0
        #expect(out.titles.map(\.info.raw) == ["B", "C"])
        #expect(out.title("B")?.position == position(160))
        #expect(out.title("C")?.position == position(190))
        #expect(out.packets.map(\.position) == (0..<400).map(position))
    }

    @Test func theEndDecidesAWaitingTitleWithTheAudioThereIs() throws {
        // The stream ends 1 s after the title: the window is short, the silence still counts.
        var events = programEvents(Self.program, frames: 240, titles: [(position(200), "B")])
        events.removeLast()
        events.append(.discontinuity(position: 99_999))
        let out = try align(events, .standard, joinsMidTrack: true, meter: meter(silent: 185..<205)).0
        #expect(out.title("B")?.position == position(195))
        #expect(out.packets.count == 240)
        if case .discontinuity = out.events.last {} else { Issue.record("the discontinuity must come after everything held") }
    }

    @Test func paddingCopiesFramesAcrossTheCut() throws {
        let events = programEvents(Self.program, frames: 400, titles: [(position(100), "B"), (position(300), "C")])
        let options = SplitOptions(searchesSilence: false, paddingPrevious: 0.5, paddingNext: 0.25)
        let out = try align(events, options).0
        let previous = Int((0.5 / frame).rounded(.up)), next = Int((0.25 / frame).rounded(.up))
        let plain = (0..<400).map(position)
        // B is the connection's first title: the recorder renames the file in progress there
        // instead of cutting, so no copies (they would play twice in that one file).
        #expect(out.files == [
            Array(plain[0..<100]),
            Array(plain[100..<300 + previous]),
            Array(plain[300 - next..<400]),
        ])
    }

    @Test func paddingStartsAgainAfterADiscontinuity() throws {
        var events = programEvents(Self.program, frames: 200, titles: [(position(50), "A"), (position(100), "B")])
        events.removeLast()
        events.append(.discontinuity(position: position(200)))
        events += programEvents(Self.program, frames: 200, titles: [(position(50), "C"), (position(150), "D")])
        let options = SplitOptions(searchesSilence: false, paddingPrevious: 0.5, paddingNext: 0.25)
        let out = try align(events, options).0
        let previous = Int((0.5 / frame).rounded(.up)), next = Int((0.25 / frame).rounded(.up))
        let plain: [Int] = (0..<200).map(position)
        // Files: before A | A | B, then across the discontinuity: before C | C | D.
        let bAndBeforeC: [Int] = Array(plain[(100 - next)...]) + Array(plain[..<50])
        let expected: [[Int]] = [
            Array(plain[..<50]),
            Array(plain[50..<(100 + previous)]),
            bAndBeforeC,
            Array(plain[50..<(150 + previous)]),
            Array(plain[(150 - next)...]),
        ]
        #expect(out.files == expected)
    }
}

// MARK: The station's audio, decoded for real

@Suite("Split: cuts in the station's audio")
struct SplitAudioTests {
    static let titles = ["Tones - A", "Tones - B", "Tones - C", "Tones - D"]

    /// The cut for `title`, in seconds of stream time.
    static func cutSeconds(_ out: SplitOutcome, _ title: String, _ program: StationProgram) throws -> Double {
        let change = try #require(out.title(title))
        #expect(program.frameOffsets.contains(change.position % program.loop.count), "a cut is a frame boundary")
        return program.seconds(atStreamOffset: change.position)
    }

    @Test func silenceAndATitleLate() async throws {
        // 1.5 s of silence before each boundary; titles 0.9 s late (announced every 0.125 s).
        let configuration = StationConfiguration(
            metaint: 2000, trackSeconds: 4, gapSeconds: 1.5, metaOffsetSeconds: 0.9, titles: Self.titles)
        let program = try await encode(configuration)
        let (out, statistics) = try align(stationEvents(configuration, program: program, seconds: 16), .standard)
        for index in 1...2 {
            let boundary = program.boundarySeconds(ofTrack: index)
            let announced = program.seconds(atStreamOffset: try #require(out.title(Self.titles[index])).announcedPosition)
            #expect(announced >= boundary + 0.89 && announced < boundary + 1.1)
            let cut = try Self.cutSeconds(out, Self.titles[index], program)
            #expect(cut > boundary - 1.5 && cut < boundary, "cut \(cut) s must be in the silence before \(boundary) s")
        }
        #expect(statistics.inSilence >= 2)
    }

    @Test func fadeIntoSilenceAndATitleEarly() async throws {
        let configuration = StationConfiguration(
            metaint: 2000, trackSeconds: 4, gapSeconds: 1, fadeOutSeconds: 1.5, metaOffsetSeconds: -0.5, titles: Self.titles)
        let program = try await encode(configuration)
        let out = try align(stationEvents(configuration, program: program, seconds: 12), .standard).0
        for index in 1...2 {
            let boundary = program.boundarySeconds(ofTrack: index)
            let announced = program.seconds(atStreamOffset: try #require(out.title(Self.titles[index])).announcedPosition)
            #expect(announced >= boundary - 0.51 && announced < boundary - 0.3)
            let cut = try Self.cutSeconds(out, Self.titles[index], program)
            #expect(cut > boundary - 1 && cut < boundary, "cut \(cut) s must be in the silence before \(boundary) s")
        }
    }

    @Test func hardCutOnTimeStaysWithinAFrame() async throws {
        // No gap; metadata every 400 bytes (under a frame), so the title is on time to a frame.
        let configuration = StationConfiguration(metaint: 400, trackSeconds: 4, titles: Self.titles)
        let program = try await encode(configuration)
        let (out, statistics) = try align(stationEvents(configuration, program: program, seconds: 12), .standard)
        for index in 1...2 {
            let change = try #require(out.title(Self.titles[index]))
            #expect(abs(change.position - program.tracks[index].startOffset) <= 418)
            #expect(change.position == change.announcedPosition, "nothing to move towards")
        }
        #expect(statistics.moved == 0 && statistics.inSilence == 0)
    }

    @Test func aQuietPassageIsNotAGap() async throws {
        // A -30 dBFS second ending 2 s before each hard cut: well inside the 3 s window.
        let configuration = StationConfiguration(
            metaint: 400, trackSeconds: 6, quietPassage: .init(startSeconds: 3, seconds: 1, levelDBFS: -30), titles: Self.titles)
        let program = try await encode(configuration)
        let out = try align(stationEvents(configuration, program: program, seconds: 14), .standard).0
        for index in 1...2 {
            let change = try #require(out.title(Self.titles[index]))
            #expect(change.position == change.announcedPosition)
        }
        // And the passage really is there, at -30 dBFS, as the meter measures it.
        var meter = DecodingLevelMeter()
        var levels: [Float] = []
        let events = stationEvents(configuration, program: program, seconds: 6)
        let packets = SplitOutcome(events: events).packets
        #expect(meter.measure(priming: [], frames: packets[...], into: &levels))
        let passage = Int(3.2 / program.frameSeconds)..<Int(3.9 / program.frameSeconds)
        #expect(levels[passage].allSatisfy { (-31.5 ... -28.5).contains($0) }, "\(levels[passage])")
        #expect(levels[Int(1 / program.frameSeconds)] > -10)
    }

    @Test func ofTwoSilencesTheNearerWins() async throws {
        // 2 s tones, 1 s gaps: every window of ±3 s holds two gaps.
        let configuration = StationConfiguration(metaint: 400, trackSeconds: 2, gapSeconds: 1, titles: Self.titles + ["Tones - E"])
        let program = try await encode(configuration)
        let b1 = program.tracks[1].startOffset, b2 = program.tracks[2].startOffset, b3 = program.tracks[3].startOffset
        let bytesPerSecond = 16000
        // B 0.6 s late: its own gap (0.6 s back) beats the next one (1.4 s on).
        // D 1.6 s late: the gap 0.4 s on (before E) beats its own (1.6 s back); the rule, not a guess.
        let frames = program.frameIndex(atOrAfter: program.tracks[4].endOffset)
        let events = programEvents(program, frames: frames, titles: [
            (b1 + 6 * bytesPerSecond / 10, "B"), (b2, "C"), (b3 + 16 * bytesPerSecond / 10, "D"),
        ])
        let out = try align(events, .standard, joinsMidTrack: true).0
        let seconds = { (title: String) throws -> Double in try Self.cutSeconds(out, title, program) }
        let t1 = program.seconds(atStreamOffset: b1), t3 = program.seconds(atStreamOffset: b3)
        let t4 = program.boundarySeconds(ofTrack: 4)
        #expect(try seconds("B") > t1 - 1 && seconds("B") < t1)
        #expect(try seconds("D") > t4 - 1 && seconds("D") < t4)
        #expect(try seconds("D") > t3 + 2)
    }

    @Test func everyFrameOnceWithoutPaddingAndPaddingOnTheRightSide() async throws {
        let configuration = StationConfiguration(
            metaint: 2000, trackSeconds: 3, gapSecondsPerTrack: [1.2, 0, 0.8, 0], metaOffsetSeconds: -0.4, titles: Self.titles)
        let program = try await encode(configuration)
        let events = stationEvents(configuration, program: program, seconds: 2 * program.loopSeconds)
        let input = SplitOutcome(events: events)
        let plain = try align(events, .standard).0
        #expect(plain.packets.map(\.position) == input.packets.map(\.position))
        #expect(plain.packets.map { Array($0.bytes) } == input.packets.map { Array($0.bytes) })
        #expect(plain.titles.map(\.info.raw) == input.titles.map(\.info.raw))
        #expect(plain.files.count == input.files.count)

        let padded = try align(events, SplitOptions(paddingPrevious: 0.4, paddingNext: 0.2)).0
        let previous = Int((0.4 / program.frameSeconds).rounded(.up)), next = Int((0.2 / program.frameSeconds).rounded(.up))
        let files = plain.files
        for (index, file) in padded.files.enumerated() {
            // files[0] precedes the first title, which renames it rather than cutting: no copies there.
            let head = index > 1 ? Array(files[index - 1].suffix(next)) : []
            let tail = index > 0 && index + 1 < files.count ? Array(files[index + 1].prefix(previous)) : []
            #expect(file == head + files[index] + tail, "file \(index)")
        }
    }

    @Test(arguments: [(StationCodec.mp3, 44100), (.aac, 44100), (.aac, 22050)])
    func aWindowMeasuredInStepsReadsAsItDoesMeasuredWhole(codec: StationCodec, sampleRate: Int) async throws {
        // The outward search decodes a window in steps: a decoder that goes on, or one reset (or
        // new) and primed by the frames before the step. Its cut is the whole window's only if
        // each frame's level is the same either way: checked here with the real decoders, on a
        // window that holds a gap, a fade and tone (the steps below reuse reset decoders).
        // AAC at 22.05 kHz is decoded at twice its rate (FAAD2's implicit SBR).
        var configuration = StationConfiguration(metaint: 2000, bitrate: sampleRate > 32000 ? 128 : 64, sampleRate: sampleRate,
                                                 trackSeconds: 4, gapSeconds: 1, fadeOutSeconds: 0.5, titles: Self.titles)
        configuration.codec = codec
        let program = try await encode(configuration)
        let packets = SplitOutcome(events: stationEvents(configuration, program: program, seconds: 12)).packets
        let window = Int(6 / program.frameSeconds)
        let start = Int(1.5 / program.frameSeconds)
        var meter = DecodingLevelMeter()
        var whole: [Float] = []
        #expect(meter.measure(priming: packets[start - 4..<start], frames: packets[start..<start + window], into: &whole))
        let step = Int((0.5 / program.frameSeconds).rounded(.up))
        var stepped: [Float] = []
        var segment: [Float] = []
        // Downwards, as the search's lower side goes: no step follows the one before, so each is
        // primed, on the older of the two decoders the meter keeps, reset.
        for lower in stride(from: 0, to: window, by: step).reversed() {
            let upper = min(lower + step, window)
            // The aligner's priming rule: at least 3 frames and 1024 bytes, at most 16.
            var first = start + lower
            var bytes = 0
            while start + lower - first < 16, start + lower - first < 3 || bytes < 1024 {
                first -= 1
                bytes += packets[first].bytes.count
            }
            #expect(meter.measure(priming: packets[first..<start + lower], frames: packets[start + lower..<start + upper],
                                  into: &segment))
            stepped.insert(contentsOf: segment, at: 0)
        }
        meter.finish()
        #expect(stepped.count == whole.count)
        #expect(whole.contains { $0 < -50 } && whole.contains { $0 > -20 }, "the window holds silence and tone")
        let tolerance: Float = codec == .mp3 ? 0 : 0.1
        for index in 0..<window {
            #expect(abs(stepped[index] - whole[index]) <= tolerance || (stepped[index] < -120 && whole[index] < -120),
                    "frame \(index): \(stepped[index]) dBFS in steps, \(whole[index]) whole")
        }
        // Upwards, each step follows the one before: the meter goes on with its decoder, which
        // is the whole window's decode cut in pieces: exactly its levels, for every codec (the
        // priming handed in is not decoded). Two decoders kept at once, one a side.
        var further: [Float] = []
        let middle = window / 2
        #expect(meter.measure(priming: packets[start - 4..<start], frames: packets[start..<start + step], into: &segment))
        further += segment
        var other: [Float] = []
        #expect(meter.measure(priming: packets[start + middle - 4..<start + middle], frames: packets[start + middle..<start + middle + step],
                              into: &other))
        for lower in stride(from: step, to: middle, by: step) {
            #expect(meter.measure(priming: packets[start + lower - 4..<start + lower],
                                  frames: packets[start + lower..<start + min(lower + step, middle)], into: &segment))
            further += segment
        }
        #expect(further == Array(whole[..<middle]))
    }

    @Test func decodeCostPerTitleChange() async throws {
        let configuration = StationConfiguration(metaint: 2000, trackSeconds: 8, gapSeconds: 1, titles: Self.titles)
        let program = try await encode(configuration)
        let events = stationEvents(configuration, program: program, seconds: program.loopSeconds)
        let packets = SplitOutcome(events: events).packets
        let window = Int(6 / program.frameSeconds)
        var meter = DecodingLevelMeter()
        var levels: [Float] = []
        let clock = ContinuousClock()
        let rounds = 20
        let elapsed = clock.measure {
            for round in 0..<rounds {
                let start = 10 + round * 7
                _ = meter.measure(priming: packets[start - 4..<start], frames: packets[start..<start + window], into: &levels)
            }
        }
        // What it costs is make bench's business; here: every frame of the window got a level.
        #expect(levels.count == window)
        print("split: one 6 s window (\(window) frames + 4 priming) measured in \(elapsed / rounds)")
    }
}

// MARK: End to end, over loopback

@Suite("Split: recording over loopback")
struct SplitRecordTests {
    @Test("Titles 0.9 s late, 1.5 s gaps: each file ends inside the gap, every frame in one file")
    func recordedFilesEndInTheGaps() async throws {
        let configuration = StationConfiguration(
            metaint: 4000, trackSeconds: 6, gapSeconds: 1.5, metaOffsetSeconds: 0.9, pace: .fast,
            titles: SplitAudioTests.titles, maxSeconds: 32)
        let server = try await TestStationServer.start(configuration)
        defer { Task { try? await server.stop() } }
        let program = server.program
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-split-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }

        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let station = Station(id: "split", name: "Split FM", urls: [server.streamURL])
        let finished = FinishedTracks()
        let recorder = TrackRecorder(station: station, options: finished.collecting(RecordingOptions(outputDirectory: folder.path)),
                                     logger: Logger(label: "test")) { _ in }
        let aligner = SplitAligner(recorder, options: .standard, logger: Logger(label: "test"))
        let writer = QueuedSink(aligner, label: "test")
        let session = StationSession(station: station, loop: loop, options: IngestOptions(), sinks: [writer], logger: Logger(label: "test"))
        session.start()
        session.stop(.limitReached, after: 60)
        #expect(await session.stopped() == .endOfStream)
        writer.drain()

        let tracks = finished.all
        let sent = program.audioByteCount(from: 0, seconds: 32)
        #expect(tracks.reduce(0) { $0 + $1.audioByteCount } == sent, "every frame in exactly one file")
        #expect(tracks.count == 6)  // the tuned-in one, A, B, C, D, and A cut short by the end
        let gapBytes = Int(1.5 * Double(configuration.bytesPerSecond))
        let boundaries = (0..<2).flatMap { round in program.tracks.map { round * program.loop.count + $0.startOffset } }
        // The first title names the track we tuned into (the station's first block, judged 0.9 s
        // back, names the loop's last track); A's title comes 0.9 s into the connection with no
        // gap before it: it stays where it arrived. Every later cut has a real gap.
        var cut = tracks[0].audioByteCount
        #expect(cut > 14_400 && cut < 20_000)
        for track in tracks.dropFirst().dropLast() {
            cut += track.audioByteCount
            // In the decoded silence: after the tone's end (plus LAME's delay), not after the next start.
            let boundary = try #require(boundaries.first { $0 >= cut })
            #expect(cut > boundary - gapBytes + 600 && cut <= boundary, "cut at \(cut), gap \(boundary - gapBytes)..<\(boundary)")
        }
        #expect(aligner.statistics.inSilence == tracks.count - 2)
    }
}
