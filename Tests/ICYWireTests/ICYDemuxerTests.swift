import Testing
@testable import ICYWire

@Suite struct ICYDemuxerTests {
    private let audio = (0..<100).map { UInt8($0) }

    @Test func interleavedMetadata() {
        let stream = Fixtures.icyStream(audio: audio, metaint: 16, blocks: ["StreamTitle='A';", nil, "StreamTitle='B - C';"])
        var demuxer = ICYDemuxer(metaint: 16)
        let outputs = demuxer.consume(stream)
        let audioOut: [UInt8] = outputs.flatMap { output -> [UInt8] in if case .audio(let bytes) = output { bytes } else { [] } }
        let blocks = outputs.compactMap { if case .metadata(let block) = $0 { block } else { nil } }
        #expect(audioOut == audio)
        // Intervals end at 16, 32, 48, 64, 80, 96; every second one has a 0 length byte.
        #expect(blocks.map(\.position) == [16, 48, 64, 96])
        #expect(blocks.map { StreamMetadata.parse($0.bytes).streamTitle } == ["A", "B - C", "A", "B - C"])
        #expect(blocks[0].bytes.count == 16)
        #expect(demuxer.audioPosition == 100)
        #expect(demuxer.state == .audio(remaining: 12))
    }

    @Test func zeroLengthByteEmitsNothing() {
        let stream = Fixtures.icyStream(audio: audio, metaint: 10, blocks: [nil])
        var demuxer = ICYDemuxer(metaint: 10)
        #expect(demuxer.consume(stream) == [.audio(audio)])
    }

    @Test func maximalBlockSplitAcrossChunks() {
        let text = "StreamTitle='" + String(repeating: "x", count: 4080 - 15) + "';"
        #expect(text.utf8.count == 4080)
        let stream = Fixtures.icyStream(audio: audio, metaint: 50, blocks: [text])
        #expect(stream[50] == 255)
        var demuxer = ICYDemuxer(metaint: 50)
        var outputs: [ICYDemuxer.Output] = []
        for start in stride(from: 0, to: stream.count, by: 1000) {
            outputs += demuxer.consume(Array(stream[start..<min(start + 1000, stream.count)]))
            if start == 1000 { #expect(demuxer.state == .metadata(remaining: 4080 - (2000 - 51))) }
        }
        let blocks = outputs.compactMap { if case .metadata(let block) = $0 { block } else { nil } }
        #expect(blocks.count == 2)
        #expect(blocks.allSatisfy { $0.bytes.count == 4080 })
        #expect(blocks.map(\.position) == [50, 100])
        #expect(StreamMetadata.parse(blocks[0].bytes).streamTitle?.count == 4065)
    }

    @Test func passthroughWithoutMetaint() {
        for metaint in [nil, 0, -5] {
            var demuxer = ICYDemuxer(metaint: metaint)
            #expect(demuxer.metaint == nil)
            #expect(demuxer.consume(audio) == [.audio(audio)])
            #expect(demuxer.consume([]) == [])
            #expect(demuxer.audioPosition == 100)
        }
    }

    @Test func audioIsHandedOnWithoutCopying() {
        var demuxer = ICYDemuxer(metaint: 8)
        let stream = Fixtures.icyStream(audio: Array(audio.prefix(20)), metaint: 8, blocks: [nil])
        stream.withUnsafeBytes { raw in
            var offsets: [Int] = []
            demuxer.consume(raw, onAudio: { offsets.append($0.baseAddress! - raw.baseAddress!) }, onMetadata: { _ in })
            #expect(offsets == [0, 9, 18])
        }
    }

    @Test func sameOutputForEverySplit() {
        var generator = SplitMix64(seed: 11)
        let audio = generator.bytes(3000)
        let titles: [String?] = ["StreamTitle='One';", nil, "StreamTitle='Two';StreamUrl='http://x/?a=1;b=2';", String(repeating: "z", count: 700)]
        let stream = Fixtures.icyStream(audio: audio, metaint: 97, blocks: titles)
        var reference: [ICYDemuxer.Output]?
        for chunks in Splits.all(stream) {
            var demuxer = ICYDemuxer(metaint: 97)
            var outputs: [ICYDemuxer.Output] = []
            for chunk in chunks {
                for output in demuxer.consume(chunk) {
                    if case .audio(let more) = output, case .audio(let previous) = outputs.last {
                        outputs[outputs.count - 1] = .audio(previous + more)
                    } else {
                        outputs.append(output)
                    }
                }
            }
            if let reference {
                let same = outputs == reference
                #expect(same)
            } else {
                reference = outputs
                #expect(outputs.first == .audio(Array(audio.prefix(97))))
            }
        }
    }
}
