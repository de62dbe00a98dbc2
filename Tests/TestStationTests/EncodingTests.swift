@testable import ICYWire
import LameEncoding
import Testing
@testable import TestStation

@Suite struct ToneGeneratorTests {
    let tones = ToneGenerator(sampleRate: 44100, channels: 2)

    @Test func toneHasHalfScalePeakFadesAndAGap() {
        let samples = tones.samples(frequency: 440, toneSeconds: 0.5, gapSeconds: 0.25)
        #expect(samples.count == (22050 + 11025) * 2)
        let tone = samples.prefix(22050 * 2)
        let peak = tone.map { abs(Int($0)) }.max() ?? 0
        #expect((15900...16384).contains(peak), "peak \(peak) should be about half of full scale")
        // Both channels carry the same tone.
        #expect(stride(from: 0, to: tone.count, by: 2).allSatisfy { tone[$0] == tone[$0 + 1] })
        // The fade: silent at both ends, still quiet 2 ms in (a 10 ms ramp reaches 20 % there).
        #expect(samples[0] == 0)
        #expect(tone.suffix(2).allSatisfy { abs(Int($0)) < 200 })
        let early = tone.prefix(88 * 2).map { abs(Int($0)) }.max() ?? 0
        #expect(early < 16384 / 4)
        #expect(samples.suffix(11025 * 2).allSatisfy { $0 == 0 })
    }
}

@Suite struct MP3EncoderTests {
    @Test func outputIsBareFramesAtTheRequestedSettings() throws {
        let encoder = try MP3Encoder(sampleRate: 44100, channels: 2, bitrate: 128)
        let pcm = ToneGenerator().samples(frequency: 440, toneSeconds: 1)
        let bytes = encoder.encode(interleaved: pcm) + encoder.flush()
        let frames = try #require(wholeFrames(bytes))
        #expect(frames.allSatisfy { $0.bitrate == 128_000 && $0.sampleRate == 44100 && $0.layer == .layer3 })
        // 44100 / 1152 = 38.3 frames, plus LAME's encoder delay and final padding.
        #expect((39...42).contains(frames.count))
        // No Xing/Info frame: the first frame would carry the tag in its side-info area.
        let firstFrame = bytes.prefix(frames[0].frameLength)
        #expect(!firstFrame.containsSequence(Array("Xing".utf8)) && !firstFrame.containsSequence(Array("Info".utf8)))
    }

    @Test func monoEncodes() throws {
        let encoder = try MP3Encoder(sampleRate: 22050, channels: 1, bitrate: 64)
        let bytes = encoder.encode(interleaved: ToneGenerator(sampleRate: 22050, channels: 1).samples(frequency: 440, toneSeconds: 0.5))
            + encoder.flush()
        let frames = try #require(wholeFrames(bytes))
        #expect(frames.allSatisfy { $0.channelMode == .mono && $0.version == .mpeg2 && $0.bitrate == 64_000 })
    }

    @Test func settingsLAMEWouldChangeAreRejected() {
        #expect(throws: EncoderError.unsupportedSettings(sampleRate: 44100, channels: 2, bitrate: 100)) {
            try MP3Encoder(sampleRate: 44100, channels: 2, bitrate: 100)
        }
        #expect(throws: EncoderError.self) { try MP3Encoder(channels: 3) }
    }
}

@Suite struct StationProgramTests {
    @Test func tracksAreWholeDistinctFramesOfTheRightLength() throws {
        let program = try Fixtures.program.get()
        #expect(program.tracks.map(\.title) == StationConfiguration.defaultTitles)
        #expect(Set(program.tracks.map(\.frequency)).count == program.tracks.count)
        #expect(Set(program.tracks.map(\.bytes)).count == program.tracks.count)
        var expectedStart = 0
        for track in program.tracks {
            let frames = try #require(wholeFrames(track.bytes), "track \(track.index) is not whole frames")
            #expect(frames.count == track.frameCount)
            #expect(frames.allSatisfy { $0.bitrate == 128_000 && $0.sampleRate == 44100 })
            // One second of tone: 38.3 frames plus encoder delay and padding.
            let nominal = 44100.0 / 1152
            #expect(Double(track.frameCount) >= nominal && Double(track.frameCount) <= nominal + 3)
            #expect(track.startOffset == expectedStart)
            #expect(Array(program.loop[track.loopRange]) == track.bytes)
            expectedStart = track.endOffset
        }
        #expect(expectedStart == program.loop.count)
        #expect(program.frameOffsets.count == program.tracks.map(\.frameCount).reduce(0, +))
    }

    @Test func audioWrapsAroundTheLoop() throws {
        let program = try Fixtures.program.get()
        let loop = program.loop
        #expect(program.audio(from: loop.count - 10, count: 20) == Array(loop.suffix(10) + loop.prefix(10)))
        #expect(program.audio(from: 3 * loop.count + 5, count: 7) == Array(loop[5..<12]))
        #expect(program.audio(from: 0, count: 2 * loop.count + 1) == loop + loop + [loop[0]])
    }

    @Test func trackLookupFollowsTheLoop() throws {
        let program = try Fixtures.program.get()
        let second = program.tracks[1]
        #expect(program.track(atLoopOffset: second.startOffset - 1).index == 0)
        #expect(program.track(atLoopOffset: second.startOffset).index == 1)
        #expect(program.track(atStreamOffset: program.loop.count + second.startOffset).index == 1)
        #expect(program.track(atLoopOffset: program.loop.count - 1).index == program.tracks.count - 1)
    }

    @Test func frameArithmeticLandsOnFrameBoundaries() throws {
        let program = try Fixtures.program.get()
        let frames = program.frameOffsets.count
        #expect(program.streamOffset(ofFrame: frames + 2) == program.loop.count + program.frameOffsets[2])
        #expect(program.frameIndex(atOrAfter: program.frameOffsets[5]) == 5)
        #expect(program.frameIndex(atOrAfter: program.frameOffsets[5] + 1) == 6)
        #expect(program.frameIndex(atOrAfter: program.loop.count) == frames)

        // Two seconds of audio from frame 7: whole frames playing at least 2 s, no more than one extra.
        let start = program.streamOffset(ofFrame: 7)
        let count = program.audioByteCount(from: start, seconds: 2)
        let headers = try #require(wholeFrames(program.audio(from: start, count: count)))
        let seconds = Double(headers.count * 1152) / 44100
        #expect(seconds >= 2 && seconds < 2 + 1152.0 / 44100)

        let live = program.liveOffset(elapsedSeconds: 9.5)
        #expect(program.streamOffset(ofFrame: program.frameIndex(atOrAfter: live)) == live)
    }
}

extension Collection where Element: Equatable {
    func containsSequence(_ needle: [Element]) -> Bool {
        let haystack = Array(self)
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<$0 + needle.count]) == needle }
    }
}
