import Testing
@testable import TestStation

@Suite struct StationTransmissionTests {
    @Test func metadataBlockIsRawUTF8PaddedBehindItsLength() {
        let block = StationTransmission.metadataBlock(title: "Ünïcödé Tönes – Sœur's Song; Part=2", url: "http://x/")
        let payload = Array(block.dropFirst())
        #expect(Int(block[0]) * 16 == payload.count)
        let text = "StreamTitle='Ünïcödé Tönes – Sœur's Song; Part=2';StreamUrl='http://x/';"
        #expect(Array(payload.prefix(text.utf8.count)) == Array(text.utf8))
        #expect(payload.dropFirst(text.utf8.count).allSatisfy { $0 == 0 })
        #expect(payload.count - text.utf8.count < 16)
    }

    @Test func overlongTitleIsCutAtACharacterBoundary() {
        let title = String(repeating: "é", count: 3000)  // 6000 bytes
        let block = StationTransmission.metadataBlock(title: title, url: "u")
        #expect(block[0] == 255)
        let text = block.dropFirst().prefix { $0 != 0 }
        #expect(String(validating: Array(text), as: UTF8.self) != nil)
        #expect(String(decoding: text, as: UTF8.self).hasSuffix("é';StreamUrl='u';"))
    }

    @Test func renderedStreamDemuxesToTheProgramAndAnnouncesEachTitleOnce() throws {
        let program = try Fixtures.program.get()
        let metaint = 1000
        let count = 2 * program.loop.count + 777
        let rendered = StationTransmission.render(
            program: program, startOffset: 0, metaint: metaint, audioCount: count, streamURL: "http://u/")
        #expect(rendered.audio == program.audio(from: 0, count: count))

        let (audio, blocks, garbage) = demux(rendered.bytes, metaint: metaint)
        #expect(!garbage)
        #expect(audio == rendered.audio)
        // A block sits before every metaint-th audio byte that exists, none after the last one.
        #expect(blocks.count == (count - 1) / metaint)

        // Expected: the title of the track playing after each block, whenever it differs from the last one sent.
        var expected: [String] = []
        for k in 1...blocks.count {
            let title = program.track(atStreamOffset: k * metaint).title
            if expected.last != title { expected.append(title) }
        }
        #expect(blocks.compactMap(streamTitle) == expected)
        #expect(rendered.titles.map(\.title) == expected)
        #expect(blocks.filter(\.isEmpty).count == blocks.count - expected.count)
        // Two rounds of a 4-track loop: 8 announcements plus the first.
        #expect(expected.count >= 2 * program.tracks.count)
    }

    @Test func dripFedTransmissionMatchesTheRendering() throws {
        let program = try Fixtures.program.get()
        let start = program.streamOffset(ofFrame: 100)
        let count = program.loop.count + 5000
        let rendered = StationTransmission.render(
            program: program, startOffset: start, metaint: 977, audioCount: count, streamURL: "u")
        var transmission = StationTransmission(
            program: program, startOffset: start, metaint: 977, audioLimit: count, streamURL: "u")
        var bytes: [UInt8] = []
        var generator = SystemRandomNumberGenerator()
        while !transmission.isFinished {
            transmission.next(maxAudioBytes: Int.random(in: 1...3000, using: &generator)) { chunk in
                switch chunk {
                case let .audio(audio): bytes += audio
                case let .metadata(block, _): bytes += block
                }
            }
        }
        #expect(bytes == rendered.bytes)
        #expect(rendered.titles.first == .init(audioOffset: 977, title: program.track(atStreamOffset: start + 977).title))
    }
}
