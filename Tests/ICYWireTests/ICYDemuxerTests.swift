@testable import ICYWire
import SplitFixtures
import Testing

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

    /// Demuxes `stream` in every split; all splits must agree. Returns the audio, the blocks
    /// and the count of short blocks.
    private func demuxAllSplits(_ stream: [UInt8], metaint: Int) -> (audio: [UInt8], blocks: [MetadataBlock], shortBlocks: Int) {
        var reference: (audio: [UInt8], blocks: [MetadataBlock], shortBlocks: Int)?
        for chunks in Splits.all(stream, randomCount: 8) {
            var demuxer = ICYDemuxer(metaint: metaint)
            var audio: [UInt8] = []
            var blocks: [MetadataBlock] = []
            for outputs in chunks.map({ demuxer.consume($0) }) + [demuxer.finish()] {
                for output in outputs {
                    switch output {
                    case .audio(let bytes): audio += bytes
                    case .metadata(let block): blocks.append(block)
                    }
                }
            }
            if let reference {
                let same = reference.audio == audio && reference.blocks == blocks && reference.shortBlocks == demuxer.shortBlockCount
                #expect(same, "the output depends on the split")
            } else {
                reference = (audio, blocks, demuxer.shortBlockCount)
            }
        }
        return reference ?? ([], [], 0)
    }

    /// `audio` with a title block `T<n>` after every interval, `thirdBlock` as it is in place of T2.
    static func interleave(_ audio: [UInt8], metaint: Int, thirdBlock: [UInt8]) -> [UInt8] {
        var stream: [UInt8] = []
        for (index, start) in stride(from: 0, to: audio.count, by: metaint).enumerated() {
            stream += audio[start..<min(start + metaint, audio.count)]
            if start + metaint < audio.count {
                stream += index == 2 ? thirdBlock : Fixtures.metadataBlock("StreamTitle='T\(index)';")
            }
        }
        return stream
    }

    /// A block that carries fewer bytes than its length byte says.
    @Test(arguments: [
        // Length 3 (48 bytes), 16 sent: text and padding.
        [3] + Array("StreamTitle='';".utf8) + [0],
        // Length 4 (64 bytes), 32 sent: text filling two units exactly, no padding.
        [4] + Array("StreamTitle='Abcdefghijklmnopq';".utf8),
        // Length 2, nothing sent at all.
        [2],
        // Length 3 (48 bytes), 23 sent: the text and 5 of its 14 NULs, cut inside the padding.
        [3] + Array("StreamTitle='abc';".utf8) + [UInt8](repeating: 0, count: 5),
        // Length 3, 33 sent: a title with `'`, `;` and `=` in it, and none of its padding.
        [3] + Array("StreamTitle='Her's Song; Part=2';".utf8),
    ])
    func shortBlockIsRealigned(lyingBlock: [UInt8]) {
        var generator = SplitMix64(seed: 5)
        // Long enough for a look-ahead past the next block (up to 4 KiB) to complete.
        let audio = generator.bytes(12000).map { $0 == 0 ? 1 : $0 }  // no NUL: it could pass as padding
        let metaint = 500
        let stream = Self.interleave(audio, metaint: metaint, thirdBlock: lyingBlock)
        let result = demuxAllSplits(stream, metaint: metaint)
        // Not one audio byte lost or gained, every real title found, at its place.
        let sameAudio = result.audio == audio  // a Bool: a failure does not print 4000 bytes
        #expect(sameAudio)
        #expect(result.shortBlocks == 1)
        let titles = result.blocks.compactMap { StreamMetadata.parse($0.bytes).streamTitle }
        let lyingTitle = StreamMetadata.parse(lyingBlock.dropFirst()).streamTitle.map { $0.isEmpty ? [] : [$0] } ?? []
        let expected = ["T0", "T1"] + lyingTitle + (3..<23).map { "T\($0)" }
        #expect(titles.filter { $0 != "" } == expected)
        #expect(result.blocks.allSatisfy { $0.position % metaint == 0 })
    }

    /// The soak's find: a block cut inside its padding, and the audio after it starts with NUL
    /// bytes, which look like more padding. Only the next interval's length byte tells.
    @Test(arguments: [0, 1, 3, 7])
    func blockCutInsidePaddingBeforeAudioThatStartsWithNULs(leadingNULs: Int) {
        var generator = SplitMix64(seed: 9)
        var audio = generator.bytes(12000).map { $0 == 0 ? 1 : $0 }
        for offset in 0..<leadingNULs { audio[1500 + offset] = 0 }
        let metaint = 500
        let lyingBlock: [UInt8] = [3] + Array("StreamTitle='abc';".utf8) + [UInt8](repeating: 0, count: 5)
        let stream = Self.interleave(audio, metaint: metaint, thirdBlock: lyingBlock)
        let result = demuxAllSplits(stream, metaint: metaint)
        let sameAudio = result.audio == audio
        #expect(sameAudio, "audio lost or shifted")
        let titles = result.blocks.compactMap { StreamMetadata.parse($0.bytes).streamTitle }
        #expect(titles.filter { $0 != "" } == ["T0", "T1", "abc"] + (3..<23).map { "T\($0)" })
        #expect(result.blocks.allSatisfy { $0.position % metaint == 0 })
    }

    @Test func generousPaddingAndPlainTextBlocksAreNotShort() {
        let audio = [UInt8](repeating: 7, count: 300)
        let padded = [10] + Array("StreamTitle='A';".utf8) + [UInt8](repeating: 0, count: 160 - 16)
        let plain = Fixtures.metadataBlock("Artist - Title without keys")
        let stream = Array(audio[0..<100]) + padded + audio[100..<200] + plain + audio[200..<300]
        let result = demuxAllSplits(stream, metaint: 100)
        #expect(result.audio == audio)
        #expect(result.shortBlocks == 0)
        #expect(result.blocks.map(\.bytes.count) == [160, 32])
    }
}
