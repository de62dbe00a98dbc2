@testable import ICYWire
import SplitFixtures
import Testing

/// The whole pipeline (demuxer, framer, metadata parsing) gives the same result fed whole, byte
/// by byte, and in many random splits: a station's bytes arrive cut anywhere, so a parser must
/// not depend on where the network cut them (docs/architecture.md, "Drip-feed tests").
@Suite struct DripFeedTests {
    struct PipelineResult: Equatable {
        var framer: [Observed] = []
        var titles: [(position: Int, title: String?, url: String?)] = []
        var skippedByteCount = 0
        var audioBytes = 0

        static func == (a: PipelineResult, b: PipelineResult) -> Bool {
            a.framer == b.framer && a.skippedByteCount == b.skippedByteCount && a.audioBytes == b.audioBytes
                && a.titles.map(\.position) == b.titles.map(\.position)
                && a.titles.map(\.title) == b.titles.map(\.title) && a.titles.map(\.url) == b.titles.map(\.url)
        }
    }

    private func runPipeline(_ chunks: [[UInt8]], metaint: Int) -> PipelineResult {
        var demuxer = ICYDemuxer(metaint: metaint)
        var framer = AudioFramer(maxTagLength: 2000)
        var events: [FramerEvent] = []
        var result = PipelineResult()
        for chunk in chunks {
            chunk.withUnsafeBytes { raw in
                demuxer.consume(raw, onAudio: { audio in
                    framer.push(audio) { events.append($0) }
                }, onMetadata: { block in
                    let metadata = StreamMetadata.parse(block.bytes, charset: .cp1252)
                    result.titles.append((block.position, metadata.streamTitle, metadata.streamURL))
                })
            }
        }
        framer.finish { events.append($0) }
        result.framer = Observed.normalize(events)
        result.skippedByteCount = framer.skippedByteCount
        result.audioBytes = demuxer.audioPosition
        return result
    }

    /// Frames of three formats' worth of trouble: garbage, a truncated frame, a small tag,
    /// an oversized tag, a run of noise, then more frames and a cut-off tail.
    private func messyAudio() -> [UInt8] {
        var generator = SplitMix64(seed: 42)
        var audio: [UInt8] = Fixtures.garbage(31)
        audio += Fixtures.mp3Frames(10).joined()
        audio += Fixtures.id3Tag(bodyLength: 500)
        audio += Fixtures.mp3Frames(5, seedOffset: 100).joined()
        audio += Fixtures.mpegFrame(seed: 7).prefix(150)
        audio += Fixtures.mp3Frames(5, seedOffset: 200).joined()
        audio += generator.bytes(900)
        audio += Fixtures.mp3Frames(6, seedOffset: 300).joined()
        audio += Fixtures.id3Tag(bodyLength: 3000)
        audio += Fixtures.mp3Frames(4, seedOffset: 400).joined()
        audio += Fixtures.mpegFrame(seed: 9).prefix(300)
        return audio
    }

    @Test func pipelineIsSplitInvariant() {
        let audio = messyAudio()
        let titles: [String?] = [
            "StreamTitle='Guns N' Roses - Sweet Child o' Mine';StreamUrl='http://x/?a=1;b=2';",
            nil,
            "StreamTitle='';",
            "StreamTitle='Caf\u{E9}';",
        ]
        let stream = Fixtures.icyStream(audio: audio, metaint: 1000, blocks: titles)
        let splits = Splits.all(stream, randomCount: 24)
        let reference = runPipeline(splits[0], metaint: 1000)
        for (index, chunks) in splits.enumerated().dropFirst() {
            let result = runPipeline(chunks, metaint: 1000)
            #expect(result == reference, "split #\(index) (\(chunks.count) chunks) differs")
        }

        // The pipeline's framing equals framing the audio alone: metadata leaves no trace.
        let direct = FramerRun([audio], maxTagLength: 2000)
        #expect(reference.framer == direct.events)
        #expect(reference.audioBytes == audio.count)
        // A block after every whole interval, except where the cycle has a 0 length byte.
        let blockPositions = (1...(audio.count / 1000)).filter { ($0 - 1) % titles.count != 1 }.map { $0 * 1000 }
        #expect(reference.titles.map(\.position) == blockPositions)
        #expect(reference.titles.first?.title == "Guns N' Roses - Sweet Child o' Mine")
        #expect(reference.titles.first?.url == "http://x/?a=1;b=2")
        #expect(reference.titles.dropFirst().first?.title == "")
        #expect(reference.titles.dropFirst(2).first?.title == "Café")

        // Every frame put in comes out, except the cut ones and the one the noise follows (no
        // header where it ends: it may be a frame another stream cut into); tags come out
        // whole or skipped.
        let expectedPackets = 10 + 5 + 5 + 6 + 4 - 1
        #expect(direct.packets.count >= expectedPackets)
        #expect(direct.tags.map(\.bytes.count) == [510])
        let packetBytes = direct.packets.reduce(0) { $0 + $1.bytes.count }
        #expect(packetBytes + 510 + direct.skippedByteCount == audio.count)
        #expect(direct.skippedInEvents == direct.skippedByteCount)
    }

    @Test func framerAloneIsSplitInvariantOnADTSAndMixedStreams() {
        var audio: [UInt8] = []
        for index in 0..<20 { audio += Fixtures.adtsFrame(length: 300 + index * 7, seed: index) }
        audio += Fixtures.garbage(10)
        audio += Fixtures.mp3Frames(5, Fixtures.MPEGParameters.layer2_192k_48000).joined()
        audio += Fixtures.mp3Frames(5, Fixtures.MPEGParameters.mpeg2_64k_22050).joined()
        let splits = Splits.all(audio, randomCount: 16)
        let reference = FramerRun(splits[0])
        for chunks in splits.dropFirst() {
            #expect(FramerRun(chunks) == reference)
        }
        // The last ADTS frame is followed by garbage, not a header: dropped with it.
        #expect(reference.packets.count == 29)
        #expect(reference.syncedCount == 3)
        #expect(reference.skippedByteCount == 10 + Fixtures.adtsFrame(length: 300 + 19 * 7).count)
        #expect(reference.cutFrameCount == 1)
    }
}
