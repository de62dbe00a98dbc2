@testable import AirtapIngest
@testable import AirtapKit
import AirtapTestSupport
import ICYWire
import ID3Tagging
import Logging
import SplitFixtures
@testable import TestStation
import Testing

/// The whole ingest pipeline (demuxer, framer, titles) on LAME-encoded audio with interleaved
/// metadata, fed whole, byte by byte and in random splits: the events must not depend on the split.
@Suite("Ingest pipeline")
struct IngestPipelineTests {
    /// What a pipeline emitted, reduced to comparable values.
    struct Trace: Equatable {
        var packets: [(position: Int, bytes: [UInt8])] = []
        var titles: [TrackChange] = []
        var formats: [AudioFrameHeader] = []
        var order: [String] = []

        static func == (a: Trace, b: Trace) -> Bool {
            a.titles == b.titles && a.formats == b.formats && a.order == b.order
                && a.packets.elementsEqual(b.packets) { $0.position == $1.position && $0.bytes == $1.bytes }
        }
    }

    static func run(_ wire: [UInt8], metaint: Int?, chunks: [Int]) -> Trace {
        let pipeline = IngestPipeline(metaint: metaint, charset: .cp1252, logger: Logger(label: "test"))
        var trace = Trace()
        let record: (StreamEvent) -> Void = { event in
            switch event {
            case .packet(let packet):
                trace.packets.append((packet.position, Array(packet.bytes)))
                trace.order.append("p\(packet.position)")
            case .metadata(let change):
                trace.titles.append(change)
                trace.order.append("t\(change.position)")
            case .format(let header):
                trace.formats.append(header)
            default: break
            }
        }
        var offset = 0
        wire.withUnsafeBytes { raw in
            for size in chunks where offset < raw.count {
                let end = min(raw.count, offset + size)
                pipeline.consume(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), emit: record)
                offset = end
            }
        }
        pipeline.finish(emit: record)
        return trace
    }

    static func randomSplits(total: Int, seed: UInt64) -> [Int] {
        var generator = SplitMix64(seed: seed)
        var sizes: [Int] = []
        var sum = 0
        while sum < total {
            let size = Int.random(in: 1...2000, using: &generator)
            sizes.append(size)
            sum += size
        }
        return sizes
    }

    @Test("Same events whole, byte by byte and in random splits")
    func dripFeed() throws {
        let program = Programs.short
        let audioCount = program.audioByteCount(from: 0, seconds: 10)
        let rendered = StationTransmission.render(program: program, metaint: 4000, audioCount: audioCount, streamURL: "http://x/")
        let whole = Self.run(rendered.bytes, metaint: 4000, chunks: [rendered.bytes.count])

        #expect(whole.packets.flatMap(\.bytes) == rendered.audio)
        #expect(whole.titles.map(\.info.raw) == rendered.titles.map(\.title))
        #expect(whole.titles.map(\.position) == rendered.titles.map(\.audioOffset))
        #expect(whole.formats.count == 1)

        let byteByByte = Self.run(rendered.bytes, metaint: 4000, chunks: Array(repeating: 1, count: rendered.bytes.count))
        #expect(byteByByte == whole)
        for seed in UInt64(1)...8 {
            let split = Self.run(rendered.bytes, metaint: 4000, chunks: Self.randomSplits(total: rendered.bytes.count, seed: seed))
            #expect(split == whole, "split with seed \(seed) differs")
        }
    }

    @Test("An ID3v2 tag inside the audio becomes a title and never reaches a packet")
    func inStreamID3() throws {
        let program = Programs.short
        let frames = program.audio(from: 0, count: program.streamOffset(ofFrame: 40))
        let cut = program.streamOffset(ofFrame: 20)
        let tag = ID3Writer.render(ID3TextFrames([(id: "TIT2", text: "Sœur's Song"), (id: "TPE1", text: "Ünïcödé")]))
        let wire = Array(frames[..<cut]) + tag + Array(frames[cut...])

        for chunks in [[wire.count], Self.randomSplits(total: wire.count, seed: 42)] {
            let trace = Self.run(wire, metaint: nil, chunks: chunks)
            #expect(trace.packets.flatMap(\.bytes) == frames)
            #expect(trace.packets.count == 40)
            let title = try #require(trace.titles.first)
            #expect(title.source == .id3)
            #expect(title.info.artist == "Ünïcödé")
            #expect(title.info.title == "Sœur's Song")
            #expect(title.position == cut)
        }
    }

    @Test("Ogg: every new link is a title change, one that repeats the title before it too, right before its first page")
    func linkTitlesFollowTheOneRule() throws {
        let links = ["Same", "Same", "Other"].enumerated().map {
            TrackFloorTests.lyingLink(serial: UInt32($0.offset + 1), codec: .opus, title: $0.element, claimedSeconds: 1)
        }
        let wire = Array(links.joined())
        for container in [Container.ogg, .undecided] {
            let pipeline = IngestPipeline(metaint: nil, charset: .cp1252, logger: Logger(label: "test"), lastRawTitle: "Liar - Same",
                                          container: container)
            var order: [String] = []
            let record: (StreamEvent) -> Void = { event in
                switch event {
                case .packet(let packet): order.append("p\(packet.position)")
                case .metadata(let change): order.append("t\(change.position) \(change.info.raw) \(change.source.rawValue)")
                default: break
                }
            }
            wire.withUnsafeBytes { raw in pipeline.consume(raw, emit: record) }
            pipeline.finish(emit: record)
            let starts = [0, links[0].count, links[0].count + links[1].count]
            let titles = order.filter { $0.hasPrefix("t") }
            #expect(titles == ["t\(starts[0]) Liar - Same ogg", "t\(starts[1]) Liar - Same ogg", "t\(starts[2]) Liar - Other ogg"],
                    "\(container)")
            for start in starts {
                let index = try #require(order.firstIndex { $0.hasPrefix("t\(start) ") })
                #expect(order[index + 1] == "p\(start)", "\(container): the title right before its link's first page")
            }
            #expect(pipeline.lastRawTitle == "Liar - Other")
        }
    }

    @Test("The same title twice is one change; an empty title is a change")
    func repeatedTitles() {
        let program = Programs.short
        let audio = program.audio(from: 0, count: program.streamOffset(ofFrame: 30))
        var wire: [UInt8] = []
        let titles = ["A - One", "A - One", "", "B - Two"]
        let metaint = audio.count / titles.count
        for (index, title) in titles.enumerated() {
            wire += audio[(index * metaint)..<((index + 1) * metaint)]
            wire += StationTransmission.metadataBlock(title: title, url: "")
        }
        let trace = Self.run(wire, metaint: metaint, chunks: [wire.count])
        #expect(trace.titles.map(\.info.raw) == ["A - One", "", "B - Two"])
    }
}
