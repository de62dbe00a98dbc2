@testable import ICYWire
import SplitFixtures
import Testing

/// The container reader: one value per connection, chosen by a `Container`, that any body's
/// bytes go through. Fed whole, byte by byte and in random splits, and with the container left
/// for the first bytes to decide, it must hand out the same events.
@Suite("Container reader")
struct ContainerReaderTests {
    /// The events, reduced to comparable text; adjacent skips merged, since a run of skipped
    /// bytes may be reported in parts when it spans pushes.
    static func trace(_ container: Container, _ chunks: [[UInt8]]) -> [String] {
        var reader = ContainerReader(container)
        var lines: [String] = []
        var skipped: (position: Int, count: Int)?
        let record: (ContainerEvent) -> Void = { event in
            if case .skipped(let position, let count) = event, let run = skipped, run.position + run.count == position {
                skipped = (run.position, run.count + count)
                return
            }
            if let run = skipped { lines.append("skipped \(run.count) at \(run.position)") }
            skipped = nil
            switch event {
            case .skipped(let position, let count): skipped = (position, count)
            case .format(let header): lines.append("format \(header.codec.rawValue) \(header.sampleRate)")
            case .packet(let packet):
                let header = packet.header
                lines.append("packet \(packet.position) \(packet.bytes.count) \(header.isStreamHeader) \(header.startsLink) \(header.endsLink)")
            case .linkStarted(let link, let position): lines.append("link \(link.comments.streamTitle ?? "") at \(position)")
            case .id3Tag(let tag): lines.append("id3 at \(tag.position)")
            case .unsupported(let format): lines.append("unsupported \(format)")
            case .malformed(let reason): lines.append("malformed \(reason)")
            }
        }
        for chunk in chunks { chunk.withUnsafeBytes { reader.push($0, record) } }
        reader.finish(record)
        if let run = skipped { lines.append("skipped \(run.count) at \(run.position)") }
        return lines
    }

    @Test("Left undecided, Ogg is read as Ogg and MPEG audio as frames, whatever the split")
    func undecidedMatchesTheTold() {
        let ogg = (OggFixtures.link(serial: 1, codec: .vorbis, title: "Eins") + OggFixtures.link(serial: 2, codec: .opus, title: "Zwei"))
            .joined().map { $0 }
        let mpeg: [UInt8] = Fixtures.mp3Frames(30).joined().map { $0 }
        for (stream, container) in [(ogg, Container.ogg), (mpeg, .audioFrames)] {
            let told = Self.trace(container, [stream])
            #expect(told.contains { $0.hasPrefix("packet") })
            for (index, chunks) in Splits.all(stream, randomCount: 12).enumerated() {
                #expect(Self.trace(.undecided, chunks) == told, "\(container), split #\(index) (\(chunks.count) chunks)")
            }
        }
    }

    @Test("An Ogg link's title comes before its first header page, at its position; a link that repeats a title still starts")
    func linkTitles() {
        let links = [OggFixtures.link(serial: 1, codec: .vorbis, title: "Same"), OggFixtures.link(serial: 2, codec: .opus, title: "Same")]
        let lines = Self.trace(.ogg, [links.joined().joined().map { $0 }])
        let second = links[0].reduce(0) { $0 + $1.count }
        #expect(lines.filter { $0.hasPrefix("link") } == ["link Artist - Same at 0", "link Artist - Same at \(second)"])
        let firstLink = lines.firstIndex(of: "link Artist - Same at 0")
        #expect(firstLink.map { lines[$0 + 1] } == "packet 0 \(links[0][0].count) true true false")
    }

    @Test("A body too short to tell is skipped, every byte accounted for")
    func tooShortToTell() {
        #expect(Self.trace(.undecided, [[0x4F], [0x67, 0x67]]) == ["skipped 3 at 0"])
        #expect(Self.trace(.undecided, []) == [])
    }
}
