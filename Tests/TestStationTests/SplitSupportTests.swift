import Foundation
import Testing
@testable import TestStation

/// The station options the split tests need: titles early and late, per-track gaps, a fade into
/// the gap, a quiet passage.
@Suite("Split support: station options")
struct SplitSupportTests {
    /// RMS level in dBFS of interleaved samples.
    func level(_ samples: ArraySlice<Int16>) -> Double {
        let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return 20 * log10((sum / Double(samples.count)).squareRoot() / 32768)
    }

    @Test(arguments: [-0.5, 0, 0.9])
    func titlesGoOutAtTheFirstBlockAfterTheBoundaryPlusTheOffset(offsetSeconds: Double) throws {
        let program = try Fixtures.program.get()
        let configuration = StationConfiguration(metaint: 1000, metaOffsetSeconds: offsetSeconds)
        let offset = configuration.metaOffsetBytes
        #expect(offset == Int(offsetSeconds * 16000))
        let count = 2 * program.loop.count
        let rendered = StationTransmission.render(
            program: program, metaint: 1000, audioCount: count, streamURL: "u", metaOffset: offset)
        // Every boundary whose announcement falls after the first block (which names what plays
        // then) and inside the rendering.
        var expected: [StationTransmission.TitleEvent] = []
        for round in 0...2 {
            for track in program.tracks {
                let due = round * program.loop.count + track.startOffset + offset
                let block = (due + 999) / 1000 * 1000
                if block > 1000, block < count { expected.append(.init(audioOffset: block, title: track.title)) }
            }
        }
        #expect(Array(rendered.titles.dropFirst()) == expected)
        // The first block names what is playing then, judged by the same offset.
        #expect(rendered.titles.first?.title == program.track(atStreamOffset: 1000 - offset).title)
    }

    @Test func gapsPerTrackFadeOutAndQuietPassage() async throws {
        let configuration = StationConfiguration(
            trackSeconds: 2, gapSeconds: 0.25, gapSecondsPerTrack: [1, 0], fadeOutSeconds: 0.5,
            quietPassage: .init(startSeconds: 0.5, seconds: 0.5, levelDBFS: -30), titles: ["a", "b", "c"])
        #expect((0..<3).map(configuration.gapSeconds(ofTrack:)) == [1, 0, 0.25])
        let program = try await StationProgram.encoding(configuration)
        #expect(program.tracks.map(\.gapSeconds) == [1, 0, 0.25])
        // Frames cover the PCM (tone + gap) plus LAME's delay and padding: under two frames more.
        for track in program.tracks {
            let pcm = 2 + track.gapSeconds
            #expect(track.seconds >= pcm && track.seconds < pcm + 2.5 * 1152 / 44100, "track \(track.index)")
        }

        let tones = ToneGenerator(sampleRate: 44100, channels: 2)
        let samples = tones.samples(frequency: 440, toneSeconds: 2, gapSeconds: 1, fadeOutSeconds: 0.5,
                                    quiet: (start: 0.5, seconds: 0.5, gain: pow(10, -30.0 / 20) * 2.0.squareRoot() / 0.5))
        func seconds(_ from: Double, _ to: Double) -> ArraySlice<Int16> { samples[Int(from * 44100) * 2..<Int(to * 44100) * 2] }
        #expect(abs(level(seconds(0.1, 0.5)) - -9.03) < 0.2, "a 0.5 peak sine is -9 dBFS RMS")
        #expect(abs(level(seconds(0.55, 0.95)) - -30) < 0.2)
        // The fade: -6 dB at its middle, much lower near its end, zero at the last sample.
        #expect(abs(level(seconds(1.7, 1.8)) - (-9.03 + 20 * log10(0.5))) < 0.5)
        #expect(level(seconds(1.95, 1.99)) < -30)
        #expect(samples[2 * 44100 * 2 - 1] == 0)
        #expect(seconds(2, 3).allSatisfy { $0 == 0 })
    }

    @Test func invalidOptionsAreRejected() {
        let bad: [StationConfiguration] = [
            StationConfiguration(gapSecondsPerTrack: [1, -1]),
            StationConfiguration(trackSeconds: 2, fadeOutSeconds: 3),
            StationConfiguration(trackSeconds: 2, quietPassage: .init(startSeconds: 1.5, seconds: 1, levelDBFS: -30)),
            StationConfiguration(quietPassage: .init(startSeconds: 1, seconds: 1, levelDBFS: 3)),
            StationConfiguration(metaOffsetSeconds: .nan),
        ]
        for configuration in bad {
            #expect(throws: StationError.self) { try configuration.validate() }
        }
    }
}
