@testable import AirtapCuts
@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import Foundation
import ICYWire
import Logging
import TestStation
import Testing

// MARK: The learner, without I/O

@Suite("Title delay: the learner")
struct TitleDelayLearnerTests {
    func learner(_ samples: [Double]) -> TitleDelayLearner {
        var learner = TitleDelayLearner()
        for sample in samples { learner.observe(sample) }
        return learner
    }

    @Test func threeAgreeingBoundariesAreEnoughTwoAreNot() throws {
        #expect(learner([2.6, 3.1]).estimate == nil)
        let estimate = try #require(learner([2.6, 3.1, 2.9]).estimate)
        #expect(estimate.seconds == 2.9)
        #expect(abs(estimate.spread - 0.3) < 1e-9)
        #expect(estimate.boundaries == 3)
    }

    @Test func agreeingSamplesNeedNotSurroundTheirMedian() throws {
        // Two titles 2.5 s late and one that waited most of a metadata interval more: they fit
        // within 1.2 s together, though the third is more than 0.6 s from the median of all.
        let estimate = try #require(learner([2.48, 2.52, 3.27]).estimate)
        #expect(estimate.seconds == 2.52)
        #expect(estimate.boundaries == 3)
        // Of five, the four that fit together; the fifth is too far from the lowest of them.
        #expect(try #require(learner([2.48, 2.52, 3.27, 3.63, 2.33]).estimate).boundaries == 4)
    }

    @Test func threeThatAgreeByChanceAreLetGoByTheNextFarOff() throws {
        // Three scattered titles that happen to agree, then a silence 5 s off: no delay (two
        // thirds would keep it).
        #expect(try #require(learner([0.4, -0.3, 0.2]).estimate).boundaries == 3)
        #expect(learner([0.4, -0.3, 0.2, -4.6]).estimate == nil)
        // A steady station's fourth silence outside the group but near it keeps the delay.
        #expect(try #require(learner([2.4, 2.5, 2.6, 3.8]).estimate).seconds == 2.5)
        // With four agreeing, one far off is an outlier outvoted.
        #expect(try #require(learner([2.4, 2.5, 2.6, 2.7, -4.6]).estimate).boundaries == 4)
    }

    @Test func noBoundariesNoDelay() {
        #expect(TitleDelayLearner().estimate == nil)
    }

    @Test func outliersAreOutvoted() throws {
        // A quiet passage taken for a gap (-4.2), a title sent by hand (+0.1), one too far off to
        // be a delay at all (9): the rest agree on about 2.8.
        let estimate = try #require(learner([2.7, -4.2, 2.9, 9, 3.0, 0.1, 2.6, 2.8]).estimate)
        #expect(abs(estimate.seconds - 2.8) < 1e-9)
        #expect(estimate.boundaries == 5)
        #expect(learner([9, -7, .nan, .infinity]).samples.isEmpty)
    }

    @Test func samplesThatDisagreeGiveNoDelay() {
        // Three boundaries that each say something else: no consistent delay.
        #expect(learner([2.0, 3.2, -1.0]).estimate == nil)
        // Agreeing ones that are not two thirds of the recent samples.
        #expect(learner([2.0, 2.2, 2.1, -3, 4.5, -1.2]).estimate == nil)
    }

    /// Uniform in 0..<1, the same every run.
    struct Seeded {
        var state: UInt64
        mutating func next() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
    }

    @Test func scatteredTitlesSeldomSettleAndASteadyStationIsLearnedAtOnce() {
        // Titles anywhere within ±5 s of their song: 100 stations of 60 boundaries. Three samples
        // can agree by chance; the two-thirds rule lets such a delay go again within a few titles.
        var random = Seeded(state: 42)
        var settled = 0
        for _ in 0..<100 {
            var learner = TitleDelayLearner()
            for _ in 0..<60 {
                learner.observe(random.next() * 10 - 5)
                if learner.estimate != nil { settled += 1 }
            }
        }
        #expect(settled <= 6000 / 50, "at most 2 % of title changes see a delay on scattered titles: \(settled)")
        // A steady station: 2.5 s late, ±0.4 s of an encoder's buffer, up to a second of waiting
        // for the next metadata block. About 95 % are learned at their third silence, 98 % by the fourth.
        var atThird = 0, byFourth = 0
        for _ in 0..<200 {
            var learner = TitleDelayLearner()
            for index in 1...4 {
                learner.observe(2.5 + (random.next() * 0.8 - 0.4) + random.next())
                if index == 3, learner.estimate != nil { atThird += 1 }
            }
            if let estimate = learner.estimate, abs(estimate.seconds - 3) < 0.6 { byFourth += 1 }
        }
        #expect(atThird >= 180, "\(atThird) of 200 learned at the third silence")
        #expect(byFourth >= 190, "\(byFourth) of 200 learned by the fourth")
    }

    @Test func aDelayThatDriftsIsFollowed() throws {
        var learner = learner([2.5, 2.6, 2.4, 2.5, 2.7, 2.5, 2.6, 2.4, 2.5])
        #expect(try #require(learner.estimate).seconds == 2.5)
        // The station changes its encoder: titles now come half a second after the song.
        for sample in [0.5, 0.6, 0.4] {
            learner.observe(sample)
            #expect(try #require(learner.estimate).seconds == 2.5, "three new boundaries do not yet outvote the old")
        }
        learner.observe(0.5)
        let estimate = try #require(learner.estimate)
        #expect(abs(estimate.seconds - 0.5) < 1e-9)
        #expect(learner.samples.count == TitleDelayLearner.driftSamples)
    }

    @Test func keepsOnlyTheRecentSamples() {
        let samples = (0..<30).map { 1 + Double($0 % 3) / 10 }
        #expect(learner(samples).samples == Array(samples.suffix(TitleDelayLearner.capacity)))
    }

    @Test func theSettingParses() throws {
        #expect(try TitleDelaySetting.parse("auto") == .auto)
        #expect(try TitleDelaySetting.parse("off") == .off)
        #expect(try TitleDelaySetting.parse("2.5") == .fixed(2.5))
        #expect(try TitleDelaySetting.parse("-3") == .fixed(-3))
        #expect(try TitleDelaySetting.parse("1500ms") == .fixed(1.5))
        for bad in ["", "soon", "12", "-6s", "nan", "1e400", "+-100", "--4", "+-1e308"] {
            #expect(throws: AirtapError.self, "\(bad)") { try TitleDelaySetting.parse(bad) }
        }
    }
}

// MARK: The edge in the music, without audio

@Suite("Title delay: the edge in the music")
struct SongEdgeFinderTests {
    let finder = SongEdgeFinder(shortSpan: 10, middleSpan: 20, longSpan: 57, placingSpan: 6)

    /// 16 bands per frame from `band(frame, band)`.
    func spectra(frames: Int, _ band: (Int, Int) -> Float) -> FrameSpectra {
        var spectra = FrameSpectra(bandCount: 16)
        for frame in 0..<frames {
            for index in 0..<16 { spectra.bands.append(band(frame, index)) }
            spectra.levels.append(-20)
        }
        return spectra
    }

    /// A song's spectrum: a shape of its own, with a little movement frame to frame.
    func song(_ shape: Int, _ frame: Int, _ band: Int) -> Float {
        Float((band * (shape + 3)) % 11) * 3 - 40 + Float((frame * 7 + band * 3) % 5) * 0.4
    }

    @Test func aHardCutIsFoundWhereItIs() {
        let spectra = spectra(frames: 240) { frame, band in song(frame < 131 ? 1 : 4, frame, band) }
        #expect(finder.edge(in: spectra, candidates: 80...170) == 131)
    }

    @Test func aSwellInTheOldSongsLastBarDoesNotMoveTheCut() {
        // Six frames before the cut the old song swells, every band 20 dB up: the half second
        // changes most at the swell, yet the swell keeps the old song's shape.
        let spectra = spectra(frames: 240) { frame, band in
            frame >= 131 ? song(4, frame, band) : song(1, frame, band) + (frame >= 125 ? 20 : 0)
        }
        #expect(finder.edge(in: spectra, candidates: 80...170) == 131)
        var unplaced = finder
        unplaced.placingSpan = 0
        #expect(unplaced.edge(in: spectra, candidates: 80...170) == 125)
    }

    @Test func aCrossfadeHasNoEdge() {
        // Four seconds of linear fade between two songs: the change has no one place.
        let spectra = spectra(frames: 300) { frame, band in
            let mix = Float(min(max(frame - 80, 0), 150)) / 150
            return song(1, frame, band) * (1 - mix) + song(4, frame, band) * mix
        }
        #expect(finder.edge(in: spectra, candidates: 100...200) == nil)
    }

    @Test func anAbruptSoundInsideACrossfadeIsNoEdge() {
        // Four seconds of linear fade, and halfway through it the new song's drums come in at
        // once, for good: abrupt and lasting, but the fade goes on changing on both sides of it.
        let spectra = spectra(frames: 300) { frame, band in
            let mix = Float(min(max(frame - 80, 0), 150)) / 150
            let drums: Float = frame >= 155 && band < 6 ? 10 : 0
            return song(1, frame, band) * (1 - mix) + song(4, frame, band) * mix + drums
        }
        #expect(finder.edge(in: spectra, candidates: 115...195) == nil)
    }

    @Test func aDrumInsideASongIsNoEdge() {
        let spectra = spectra(frames: 240) { frame, band in song(2, frame, band) + (frame == 120 || frame == 121 ? 25 : 0) }
        #expect(finder.edge(in: spectra, candidates: 80...170) == nil)
    }

    @Test func aSteadySongOrNoFramesHaveNoEdge() {
        #expect(finder.edge(in: spectra(frames: 240) { song(3, $0, $1) }, candidates: 80...170) == nil)
        #expect(finder.edge(in: FrameSpectra(bandCount: 16), candidates: 0...10) == nil)
        // Candidates beyond the frames: nothing to trap on.
        #expect(finder.edge(in: spectra(frames: 5) { song(3, $0, $1) }, candidates: 40...90) == nil)
        #expect(finder.edge(in: spectra(frames: 5) { song(3, $0, $1) }, candidates: -9 ... -3) == nil)
    }
}

// MARK: The aligner learning and using the delay, over made-up levels

@Suite("Title delay: the aligner")
struct TitleDelayAlignerTests {
    static let program = Programs.short
    var frame: Double { Self.program.frameSeconds }
    func position(_ frame: Int) -> Int { Self.program.streamOffset(ofFrame: frame) }

    /// Songs every 400 frames (10.4 s); the first four end in a 20-frame silence, the others cut
    /// hard; each title arrives `late` frames after its song begins. The stream starts inside a
    /// song already named (`joinsMidTrack`), so "Song 1" is a change like the others.
    func stream(late: Int, songs: Int = 8) -> (events: [StreamEvent], meter: ScriptedMeter, starts: [Int]) {
        let starts = (1..<songs).map { $0 * 400 }
        var silent = Set<Int>()
        for start in starts.prefix(4) { for frame in (start - 10)..<(start + 10) { silent.insert(position(frame)) } }
        let titles = starts.enumerated().map { (position($0.element + late), "Song \($0.offset + 1)") }
        let events = programEvents(Self.program, frames: songs * 400, titles: titles)
        return (events, ScriptedMeter { [silent] in silent.contains($0) ? -90 : -10 }, starts)
    }

    @Test func silencesBeyondTheWindowTeachTheDelayAndLaterCutsFollowIt() throws {
        // Titles 4 s late (153 frames): every silence lies beyond the 3 s window.
        let late = Int((4 / frame).rounded())
        let (events, meter, starts) = stream(late: late)
        let (out, statistics) = try align(events, .standard, joinsMidTrack: true, meter: meter)
        // While it learns, the cut stays at the title (the silence is outside the window) ...
        for index in 1...2 { #expect(out.title("Song \(index)")?.position == position(starts[index - 1] + late)) }
        // ... the third silence makes the delay consistent, and is cut in by it; so is the fourth,
        // and the hard cuts after it at the corrected place, within the delay's spread.
        #expect(out.title("Song 3")?.placement?.reason == .silence)
        #expect(out.title("Song 3")?.position == position(starts[2]))
        let learned = try #require(statistics.titleDelay)
        #expect(abs(learned.seconds - 4) < 2 * frame)
        #expect(out.title("Song 4")?.placement?.reason == .silence)
        #expect(out.title("Song 4")?.position == position(starts[3]))
        for index in 5...7 {
            let change = try #require(out.title("Song \(index)"))
            #expect(change.placement?.reason == .delay)
            #expect(change.announcedPosition == position(starts[index - 1] + late))
            #expect(abs(change.position - position(starts[index - 1])) <= position(2) - position(0), "\(index)")
            #expect(abs((change.placement?.shiftSeconds ?? 0) + 4) < 2 * frame)
        }
        #expect(out.packets.map(\.position) == (0..<(8 * 400)).map(position), "every frame once, in order")
    }

    @Test func aDelayThreeTitlesAgreedOnByChanceIsLetGoByTheSilencesThatDisagree() throws {
        // Every song of the first five ends in a silence. Their first three titles come about half
        // a second late, as scattered titles may by chance; the next two 4.5 s late and 4.5 s
        // early, beyond the corrected search but within the learning reach; the last two on time,
        // at hard cuts.
        let lateness = [0.5, 0.3, 0.7, 4.5, -4.5, 0, 0]
        let starts = (1...7).map { $0 * 400 }
        var silent = Set<Int>()
        for start in starts.prefix(5) { for frame in (start - 10)..<(start + 10) { silent.insert(position(frame)) } }
        let titles = starts.enumerated().map { (position($0.element + Int((lateness[$0.offset] / frame).rounded())), "Song \($0.offset + 1)") }
        let events = programEvents(Self.program, frames: 8 * 400, titles: titles)
        let meter = ScriptedMeter { [silent] in silent.contains($0) ? -90 : -10 }
        let (out, statistics) = try align(events, .standard, joinsMidTrack: true, meter: meter)
        #expect(out.title("Song 3")?.placement?.reason == .silence)
        #expect(statistics.titleDelay == nil, "the delay is let go: \(String(describing: statistics.titleDelay))")
        // The title whose silence let it go is cut as without a delay: at the title (its silence
        // lies beyond the user's window) ...
        let letGo = try #require(out.title("Song 5"))
        #expect(letGo.position == position(starts[4] + Int((lateness[4] / frame).rounded())), "\(letGo)")
        #expect(letGo.placement?.reason == .title, "\(letGo)")
        // ... and so are the next, not half a second before their titles as the chance delay would.
        for index in 6...7 {
            let change = try #require(out.title("Song \(index)"))
            #expect(change.position == position(starts[index - 1]), "\(change)")
            #expect(change.placement?.reason != .delay, "\(change)")
        }
        #expect(out.packets.map(\.position) == (0..<(8 * 400)).map(position), "every frame once, in order")
    }

    @Test func withTheDelayOffTheSameStationIsCutAtItsTitles() throws {
        let late = Int((4 / frame).rounded())
        let (events, meter, starts) = stream(late: late)
        var options = SplitOptions.standard
        options.titleDelay = .off
        let (out, statistics) = try align(events, options, joinsMidTrack: true, meter: meter)
        #expect(statistics.titleDelay == nil)
        for index in 1...7 { #expect(out.title("Song \(index)")?.position == position(starts[index - 1] + late)) }
    }

    @Test func aDelaySetByHandIsUsedFromTheFirstTitle() throws {
        let late = Int((2.5 / frame).rounded())
        let (events, meter, starts) = stream(late: late)
        var options = SplitOptions.standard
        options.titleDelay = .fixed(2.5)
        let (out, _) = try align(events, options, joinsMidTrack: true, meter: meter)
        for index in 5...7 {
            let change = try #require(out.title("Song \(index)"))
            #expect(change.placement?.reason == .delay)
            #expect(abs(change.position - position(starts[index - 1])) <= position(2) - position(0))
        }
        #expect(out.title("Song 1")?.placement?.reason == .silence)
    }

    @Test func whatWasLearnedIsKeptForTheNextRun() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-delay-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let journal = try #require(TitleDelayJournal(stationID: "late-station", folder: folder.path))
        #expect(journal.load().samples.isEmpty)
        let late = Int((4 / frame).rounded())
        let (events, meter, starts) = stream(late: late, songs: 5)
        let sink = CollectingSink()
        let aligner = SplitAligner(sink, options: .standard, logger: Logger(label: "t"), journal: journal, meter: meter)
        for event in events { try aligner.receive(event) }
        #expect(abs((journal.load().estimate?.seconds ?? 0) - 4) < 2 * frame)
        // The next run knows the delay before its first title: a hard cut is corrected at once.
        let (later, laterMeter, _) = stream(late: late, songs: 8)
        let next = CollectingSink()
        let second = SplitAligner(next, options: .standard, logger: Logger(label: "t"), journal: journal, meter: laterMeter)
        for event in later { try second.receive(event) }
        let outcome = SplitOutcome(events: next.all)
        #expect(outcome.title("Song 5")?.placement?.reason == .delay)
        #expect(abs((outcome.title("Song 5")?.position ?? 0) - position(starts[0] + 1600)) <= position(2) - position(0))
        #expect(try journal.forget())
        #expect(journal.load().samples.isEmpty)
    }

    @Test func theJournalIsWrittenWhenTheDelayComesAndAtTheEndNotAtEveryGap() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-delay-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let journal = try #require(TitleDelayJournal(stationID: "gaps", folder: folder.path))
        // Every song ends in a silence, its title 4 s late; the stream is far shorter than the
        // journal's interval.
        let late = Int((4 / frame).rounded())
        let starts = (1..<8).map { $0 * 400 }
        var silent = Set<Int>()
        for start in starts { for frame in (start - 10)..<(start + 10) { silent.insert(position(frame)) } }
        let titles = starts.enumerated().map { (position($0.element + late), "Song \($0.offset + 1)") }
        let events = programEvents(Self.program, frames: 8 * 400, titles: titles)
        let aligner = SplitAligner(CollectingSink(), options: .standard, logger: Logger(label: "t"), journal: journal,
                                   meter: ScriptedMeter { [silent] in silent.contains($0) ? -90 : -10 })
        for event in events.dropLast() { try aligner.receive(event) }
        // Written at the first gap and when the third made the delay consistent, not at the gaps since.
        #expect(journal.load().samples.count == 3)
        #expect((aligner.statistics.titleDelay?.boundaries ?? 0) > 3)
        // The stream's end writes the rest.
        try aligner.receive(try #require(events.last))
        let kept = journal.load()
        #expect(kept.samples.count == aligner.statistics.titleDelay?.boundaries && kept.samples.count > 4)
        #expect(abs((kept.estimate?.seconds ?? 0) - 4) < 2 * frame)
    }

    @Test func theJournalIsWrittenWhenTheDelayDrifts() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-delay-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let journal = try #require(TitleDelayJournal(stationID: "drifts", folder: folder.path))
        // Every song ends in a silence; titles 4 s late, then (a new encoder) 2 s late: the delay
        // in use goes from one to the other without ever being let go.
        let starts = (1..<15).map { $0 * 400 }
        var silent = Set<Int>()
        for start in starts { for frame in (start - 10)..<(start + 10) { silent.insert(position(frame)) } }
        let titles = starts.enumerated().map { index, start in
            (position(start + Int(((index < 10 ? 4 : 2) / frame).rounded())), "Song \(index + 1)")
        }
        let events = programEvents(Self.program, frames: 15 * 400, titles: titles)
        let aligner = SplitAligner(CollectingSink(), options: .standard, logger: Logger(label: "t"), journal: journal,
                                   meter: ScriptedMeter { [silent] in silent.contains($0) ? -90 : -10 })
        for event in events.dropLast() { try aligner.receive(event) }
        // Before the stream ends, the journal already holds the delay the learner followed to.
        #expect(abs((aligner.statistics.titleDelay?.seconds ?? 0) - 2) < 2 * frame)
        #expect(abs((journal.load().estimate?.seconds ?? 0) - 2) < 2 * frame)
    }

    @Test("Forgetting: nothing there is no error; a folder in the file's place is a local error (exit 3), and stays")
    func forgettingWhatCannotGo() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-delay-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let journal = try #require(TitleDelayJournal(stationID: "odd", folder: folder.path))
        #expect(try journal.forget() == false)
        try FileManager.default.createDirectory(atPath: journal.path, withIntermediateDirectories: true)
        let error = #expect(throws: AirtapError.self) { try journal.forget() }
        #expect(error?.exitCode == 3 && error?.description.contains(journal.path) == true, "\(String(describing: error))")
        #expect(FileManager.default.fileExists(atPath: journal.path))
    }

    @Test func aJournalThatIsNotOursStartsAfresh() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-delay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, contents) in [("garbage", "not json"), ("huge", String(repeating: " ", count: 100_000) + "{\"samples\":[2,2,2]}"),
                                 ("wrong", "{\"samples\":[\"x\"]}"), ("far", "{\"samples\":[40,40,40]}")] {
            try contents.write(to: folder.appendingPathComponent(name + ".json"), atomically: true, encoding: .utf8)
            #expect(TitleDelayJournal(stationID: name, folder: folder.path)?.load().estimate == nil, "\(name)")
        }
        // Every id a stations file allows has a journal of its own, inside the folder.
        #expect(TitleDelayJournal(stationID: "../escape", folder: folder.path)?.path == folder.path + "/%2E.%2Fescape.json")
        #expect(TitleDelayJournal(stationID: ".hidden", folder: folder.path)?.path == folder.path + "/%2Ehidden.json")
        #expect(TitleDelayJournal(stationID: "jazz/fm", folder: folder.path)?.path == folder.path + "/jazz%2Ffm.json")
        #expect(TitleDelayJournal(stationID: "jazz%2Ffm", folder: folder.path)?.path == folder.path + "/jazz%252Ffm.json")
        #expect(TitleDelayJournal(stationID: "", folder: folder.path) == nil)
        #expect(TitleDelayJournal.folder(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/airtap/title-delay")
        #expect(TitleDelayJournal.folder(environment: ["HOME": "/h"]) == "/h/.local/state/airtap/title-delay")
        #expect(TitleDelayJournal.folder(environment: ["XDG_STATE_HOME": "relative"]) == nil)
    }

    @Test func aFolderWhereAJournalGoesLeavesNoTemporaryFilesBehind() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-delay-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("taken.json"), withIntermediateDirectories: true)
        let journal = try #require(TitleDelayJournal(stationID: "taken", folder: folder.path))
        journal.save(TitleDelayLearner(samples: [2, 2, 2]))
        let clicks = DirectoryClickJournal(folder: folder.path)
        let uuid = "01234567-89ab-cdef-0123-456789abcdef"
        try FileManager.default.createDirectory(at: folder.appendingPathComponent(uuid), withIntermediateDirectories: true)
        clicks.record(uuid, at: 1_000_000)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [uuid, "taken.json"])
        #expect(journal.load().samples.isEmpty && clicks.lastClick(uuid) == nil)
    }
}

// MARK: The command line

@Suite("Title delay: probe and the options")
struct TitleDelayCommandTests {
    @Test func probeShowsTheLearnedDelayAndForgetsIt() async throws {
        let server = try await TestStationServer.start(StationConfiguration(pace: .fast, maxSeconds: 5))
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder(with: """
            {"stations": [{"id": "late", "url": "\(server.streamURL)"}, {"id": "byhand", "url": "\(server.streamURL)", "titleDelay": -1.5}]}
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let state = folder.appendingPathComponent("state")
        let journal = try #require(TitleDelayJournal(stationID: "late", environment: ["XDG_STATE_HOME": state.path]))
        journal.save(TitleDelayLearner(samples: [2.8, 3.1, 2.9, 3.3]))
        let environment = ["XDG_STATE_HOME": state.path]

        let learned = try await AirtapBinary.run(["probe", "late", "--for", "1"], in: folder, environment: environment)
        #expect(learned.status == 0, "\(learned.stderr)")
        #expect(learned.stdout.contains("delay     titles 3.0 s late, learned from 4 boundaries (±0.3 s)"), "\(learned.stdout)")
        let json = try await AirtapBinary.run(["probe", "late", "--for", "1", "--json"], in: folder, environment: environment)
        #expect(json.stdout.contains(#""event":"title_delay""#) && json.stdout.contains(#""state":"learned""#), "\(json.stdout)")
        let byHand = try await AirtapBinary.run(["probe", "byhand", "--for", "1"], in: folder, environment: environment)
        #expect(byHand.stdout.contains("delay     titles 1.5 s early, set by hand"), "\(byHand.stdout)")

        let forget = try await AirtapBinary.run(["probe", "late", "--forget-title-delay"], in: folder, environment: environment)
        #expect(forget.status == 0 && forget.stdout.contains("title delay forgotten"), "\(forget.stdout) \(forget.stderr)")
        #expect(!FileManager.default.fileExists(atPath: journal.path))
        let again = try await AirtapBinary.run(["probe", "late", "--forget-title-delay"], in: folder, environment: environment)
        #expect(again.stdout.contains("no title delay was learned"), "\(again.stdout)")
        let fresh = try await AirtapBinary.run(["probe", "late", "--for", "1"], in: folder, environment: environment)
        #expect(fresh.stdout.contains("delay     not learned yet (0 boundaries so far)"), "\(fresh.stdout)")
    }

    @Test("A bad titleDelay in stations.json (text, an array, an object, a number past Double) is one line naming it, exit 1; so is a bad --title-delay",
          arguments: ["\"soon\"", "[]", "{}", "1e400"])
    func aBadDelayIsOneLineAndExitOne(value: String) async throws {
        let folder = try AirtapBinary.temporaryFolder(with: """
            {"stations": [{"id": "odd", "url": "http://127.0.0.1:9/", "titleDelay": \(value)}]}
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let option = try await AirtapBinary.run(["record", "http://127.0.0.1:9/", "--title-delay", "9", "--for", "1s"], in: folder)
        #expect(option.status != 0 && option.stderr.contains("--title-delay"), "\(option.stderr)")
        let file = try await AirtapBinary.run(["list"], in: folder)
        #expect(file.status == 1 && file.stderr.contains("titleDelay"), "\(file.stderr)")
        #expect(file.stderr.split(separator: "\n").count == 1, "\(file.stderr)")
    }
}
