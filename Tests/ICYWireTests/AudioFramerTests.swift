@testable import ICYWire
import SplitFixtures
import Testing

@Suite struct AudioFramerTests {
    /// Every expectation holds for every split of the input, not just the whole one.
    private func runAllSplits(_ input: [UInt8], maxTagLength: Int = 1 << 20) -> FramerRun {
        let runs = Splits.all(input, randomCount: 8).map { FramerRun($0, maxTagLength: maxTagLength) }
        for run in runs.dropFirst() {
            #expect(run == runs[0])
        }
        return runs[0]
    }

    private func expectPackets(_ run: FramerRun, _ frames: [[UInt8]], at starts: [Int],
                               sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(run.packets.map(\.position) == starts, sourceLocation: sourceLocation)
        // A Bool keeps a failure message short instead of dumping every byte.
        let sameBytes = run.packets.map(\.bytes) == frames
        #expect(sameBytes, "packet bytes differ from the frames", sourceLocation: sourceLocation)
    }

    @Test func cleanMP3Stream() {
        let frames = Fixtures.mp3Frames(12)
        let run = runAllSplits(frames.flatMap { $0 })
        expectPackets(run, frames, at: positions(of: frames))
        #expect(run.skippedByteCount == 0)
        #expect(run.syncedCount == 1)
        guard case .synced(let header) = run.events.first else {
            Issue.record("first event is not .synced")
            return
        }
        #expect(header.codec == .mp3)
        #expect(header.sampleRate == 44100)
    }

    @Test func mpeg2AndLayer2Streams() {
        for parameters in [Fixtures.MPEGParameters.mpeg2_64k_22050, .layer2_192k_48000] {
            let frames = Fixtures.mp3Frames(6, parameters)
            let run = runAllSplits(frames.flatMap { $0 })
            expectPackets(run, frames, at: positions(of: frames))
            #expect(run.skippedByteCount == 0)
        }
    }

    @Test func garbageBeforeAndBetweenFrames() {
        let first = Fixtures.mp3Frames(4)
        let second = Fixtures.mp3Frames(5, seedOffset: 10)
        let lead = Fixtures.garbage(123)
        let middle = Fixtures.garbage(37)
        let input = lead + first.flatMap { $0 } + middle + second.flatMap { $0 }
        let run = runAllSplits(input)
        // The frame the garbage follows is dropped: no header starts where it ends, so it
        // may be a frame another stream cut into (see stitchedFrameIsDropped).
        let starts = positions(of: Array(first.dropLast()), startingAt: 123)
            + positions(of: second, startingAt: 123 + first.joined().count + 37)
        expectPackets(run, Array(first.dropLast()) + second, at: starts)
        let lastFirst = first[3].count
        #expect(run.skippedByteCount == 160 + lastFirst)
        #expect(run.skippedInEvents == 160 + lastFirst)
        #expect(run.cutFrameCount == 1)
        #expect(run.syncedCount == 2)
        #expect(run.events.first == .skipped(position: 0, count: 123))
        #expect(run.events.contains(.skipped(position: 123 + first.joined().count - lastFirst, count: 37 + lastFirst)))
    }

    /// Icecast moving listeners to a fallback mount and back: one stream stops mid-frame and
    /// another goes on mid-frame. The frame made of both is dropped and counted, whichever
    /// side is longer; every packet is a whole frame of one stream.
    @Test(arguments: [(200, 100), (200, 500), (400, 30)])
    func stitchedFrameIsDropped(cutA: Int, startB: Int) {
        let streamA = Fixtures.mp3Frames(6)
        let streamB = Fixtures.mp3Frames(6, seedOffset: 50, .layer3_192k_44100)
        let input = Array(streamA.prefix(3).joined()) + streamA[3].prefix(cutA) + streamB[0].dropFirst(startB) + streamB.dropFirst().joined()
        let run = runAllSplits(input)
        let wholeFrames = Set(streamA + streamB)
        #expect(run.packets.allSatisfy { wholeFrames.contains(Array($0.bytes)) }, "a packet is not a whole frame of one stream")
        let kept = run.packets.map { Array($0.bytes) }
        #expect(kept == Array(streamA.prefix(3)) + Array(streamB.dropFirst()))
        #expect(run.cutFrameCount == 1)
    }

    @Test func frameBeforeAHeaderOfAnotherFormatIsKept() {
        // A switch at a frame boundary: nothing is cut, nothing is dropped.
        let streamA = Fixtures.mp3Frames(4)
        let streamB = Fixtures.mp3Frames(4, seedOffset: 50, .mpeg2_64k_22050)
        let run = runAllSplits(Array((streamA + streamB).joined()))
        #expect(run.packets.map { Array($0.bytes) } == streamA + streamB)
        #expect(run.cutFrameCount == 0)
    }

    @Test func truncatedFrameIsDroppedAndTheRestIsIntact() {
        let before = Fixtures.mp3Frames(3)
        let cut = Array(Fixtures.mpegFrame(seed: 99).prefix(100))
        let after = Fixtures.mp3Frames(5, seedOffset: 20)
        let input = before.joined() + cut + after.joined()
        let run = runAllSplits(Array(input))
        let starts = positions(of: before) + positions(of: after, startingAt: before.joined().count + 100)
        expectPackets(run, before + after, at: starts)
        #expect(run.skippedByteCount == 100)
        #expect(run.events.contains(.skipped(position: before.joined().count, count: 100)))
        #expect(run.syncedCount == 2)
    }

    @Test func truncatedFrameAtTheEndIsNotEmitted() {
        let frames = Fixtures.mp3Frames(5)
        let tail = Array(Fixtures.mpegFrame(seed: 50).prefix(200))
        let run = runAllSplits(frames.joined() + tail)
        expectPackets(run, frames, at: positions(of: frames))
        #expect(run.skippedByteCount == 200)
        #expect(run.events.last == .skipped(position: frames.joined().count, count: 200))
    }

    @Test func lastFrameIsEmittedAtFinishOnly() {
        let frames = Fixtures.mp3Frames(3)
        var framer = AudioFramer()
        let pushed = Observed.normalize(framer.push(Array(frames.joined())))
        // One frame of lookahead: the last frame waits for what follows it.
        #expect(pushed.filter { if case .packet = $0 { true } else { false } }.count == 2)
        let finished = Observed.normalize(framer.finish())
        #expect(finished == [.packet(position: frames[0].count + frames[1].count, bytes: frames[2])])
        #expect(framer.position == frames.joined().count)
    }

    @Test func loneFrameIsEmittedAtFinish() {
        let frame = Fixtures.mpegFrame()
        let run = FramerRun([frame])
        expectPackets(run, [frame], at: [0])
        #expect(run.skippedByteCount == 0)
    }

    @Test func id3TagMidStreamIsReportedAndNotInPackets() {
        let before = Fixtures.mp3Frames(3)
        let tag = Fixtures.id3Tag(bodyLength: 300)
        let after = Fixtures.mp3Frames(3, seedOffset: 7)
        let input = before.joined() + tag + after.joined()
        let run = runAllSplits(Array(input))
        let tagPosition = before.joined().count
        expectPackets(run, before + after, at: positions(of: before) + positions(of: after, startingAt: tagPosition + 310))
        #expect(run.tags.map(\.position) == [tagPosition])
        #expect(run.tags.map(\.bytes) == [tag])
        #expect(run.skippedByteCount == 0)
        #expect(run.syncedCount == 1)  // a tag at a frame boundary keeps the lock
    }

    @Test func leadingTagThenFrames() {
        let tag = Fixtures.id3Tag(bodyLength: 1000)
        let frames = Fixtures.mp3Frames(4)
        let run = runAllSplits(tag + frames.joined())
        #expect(run.tags.map(\.bytes) == [tag])
        expectPackets(run, frames, at: positions(of: frames, startingAt: tag.count))
    }

    @Test func oversizedTagIsSkippedWithoutBuffering() {
        let before = Fixtures.mp3Frames(3)
        let tag = Fixtures.id3Tag(bodyLength: 5000)
        let after = Fixtures.mp3Frames(3, seedOffset: 7)
        let input = Array(before.joined() + tag + after.joined())
        let run = runAllSplits(input, maxTagLength: 1000)
        let tagPosition = before.joined().count
        expectPackets(run, before + after, at: positions(of: before) + positions(of: after, startingAt: tagPosition + tag.count))
        #expect(run.tags.isEmpty)
        #expect(run.skippedByteCount == tag.count)
        #expect(run.events.contains(.skipped(position: tagPosition, count: tag.count)))
        #expect(run.syncedCount == 1)

        // Fed in small pieces the framer never holds the tag.
        var framer = AudioFramer(maxTagLength: 1000)
        var maxBuffered = 0
        for start in stride(from: 0, to: input.count, by: 64) {
            _ = framer.push(Array(input[start..<min(start + 64, input.count)]))
            maxBuffered = max(maxBuffered, framer.bufferedByteCount)
            if case .skippingTag = framer.state { #expect(framer.bufferedByteCount == 0) }
        }
        #expect(maxBuffered < 1000)
    }

    @Test func adtsStream() {
        let lengths = [371, 402, 355, 390, 388, 410, 366, 380]
        let frames = lengths.enumerated().map { Fixtures.adtsFrame(length: $0.element, seed: $0.offset) }
        let input = Fixtures.garbage(50) + frames.joined()
        let run = runAllSplits(Array(input))
        expectPackets(run, frames, at: positions(of: frames, startingAt: 50))
        #expect(run.skippedByteCount == 50)
        guard case .synced(let header) = run.events.dropFirst().first else {
            Issue.record("no .synced after the leading garbage")
            return
        }
        #expect(header.codec == .aac)
    }

    @Test func freeFormatFramesAreNotFramed() {
        var frames: [UInt8] = []
        for seed in 0..<6 {
            frames += [0xFF, 0xFB, 0x00, 0x44] + Fixtures.payload(count: 400, seed: seed)
        }
        let run = FramerRun([frames])
        #expect(run.packets.isEmpty)
        #expect(run.skippedByteCount == frames.count)
    }

    @Test func incompatibleHeaderEndsTheChain() {
        // An MPEG-2 frame inside an MPEG-1 stream is not a continuation.
        let first = Fixtures.mp3Frames(3)
        let stranger = Fixtures.mpegFrame(.mpeg2_64k_22050)
        let second = Fixtures.mp3Frames(3, seedOffset: 30)
        let input = first.joined() + stranger + second.joined()
        let run = runAllSplits(Array(input))
        expectPackets(run, first + second, at: positions(of: first) + positions(of: second, startingAt: first.joined().count + stranger.count))
        #expect(run.skippedByteCount == stranger.count)
    }

    @Test func randomNoiseIsBoundedAndAccounted() {
        var generator = SplitMix64(seed: 7)
        let noise = generator.bytes(300_000)
        var chunks: [[UInt8]] = []
        var offset = 0
        while offset < noise.count {
            let size = Int(generator.next() % 3000)
            chunks.append(Array(noise[offset..<min(offset + size, noise.count)]))
            offset += size
        }
        let run = FramerRun(chunks, maxTagLength: 4096)
        let packetBytes = run.packets.reduce(0) { $0 + $1.bytes.count }
        let tagBytes = run.tags.reduce(0) { $0 + $1.bytes.count }
        // Every byte is a packet, a tag or skipped, and skipped bytes are all reported.
        #expect(packetBytes + tagBytes + run.skippedByteCount == noise.count)
        #expect(run.skippedInEvents == run.skippedByteCount)
        // Chance frames need two chained headers: rare in noise.
        #expect(packetBytes < noise.count / 20)
        // Two maximal frames of lookahead plus a header, or the tag limit.
        #expect(run.maxBuffered <= 2 * 8191 + 16)
        for packet in run.packets {
            #expect(AudioFrameHeader(packet.bytes)?.frameLength == packet.bytes.count)
        }
    }

    @Test func packetsShareTheWorkBuffer() throws {
        let frames = Fixtures.mp3Frames(4)
        var framer = AudioFramer()
        var packets: [Packet] = []
        Array(frames.joined()).withUnsafeBytes { raw in
            framer.push(raw) { if case .packet(let packet) = $0 { packets.append(packet) } }
        }
        try #require(packets.count == 3)
        let addresses = packets.map { $0.bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        #expect(addresses[1] - addresses[0] == UInt(frames[0].count))
        #expect(addresses[2] - addresses[1] == UInt(frames[1].count))
        #expect(packets[1].byteRange == frames[0].count..<(frames[0].count + frames[1].count))
        #expect(packets[0].sampleCount == 1152)
    }

    @Test func resyncAfterCorruptionMidStream() {
        // A burst of noise overwrites part of a frame and what follows it.
        let frames = Fixtures.mp3Frames(20)
        var input = Array(frames.joined())
        var generator = SplitMix64(seed: 3)
        let damageStart = frames[0].count * 8 + 50
        for index in damageStart..<(damageStart + 700) { input[index] = UInt8(truncatingIfNeeded: generator.next()) }
        let run = runAllSplits(input)
        // Frames wholly before the damage survive and so do the ones after it.
        let framesAfter = frames.enumerated().filter { positions(of: frames)[$0.offset] >= damageStart + 700 }
        #expect(run.packets.prefix(8).map(\.bytes) == Array(frames.prefix(8)))
        #expect(run.packets.suffix(framesAfter.count).map(\.bytes) == framesAfter.map(\.element))
        #expect(run.skippedByteCount > 0)
    }
}
