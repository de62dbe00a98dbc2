import AirtapKit
import AirtapTestSupport
import Foundation
import ICYWire
import TestStation
import Testing

/// The split search on AAC: the same DecodingLevelMeter decodes the window with FAAD2.
@Suite("Split: AAC")
struct SplitAACTests {
    static func configuration(sampleRate: Int) -> StationConfiguration {
        // 1.5 s of silence before each boundary; titles 0.9 s late (announced every ~0.12 s).
        // The station places late titles by the nominal byte rate: ask ffmpeg for a rate its
        // encoder reaches on a tone at this sample rate.
        var configuration = StationConfiguration(
            metaint: 2000, bitrate: sampleRate > 32000 ? 128 : 64, sampleRate: sampleRate, trackSeconds: 4, gapSeconds: 1.5, metaOffsetSeconds: 0.9,
            titles: SplitAudioTests.titles)
        configuration.codec = .aac
        return configuration
    }

    @Test("A 1.5 s silence and the title 0.9 s late: the cut is in the silence, for LC at 44.1 kHz and at 22.05 kHz (decoded at twice the rate)",
          arguments: [44100, 22050])
    func silenceAndATitleLate(sampleRate: Int) async throws {
        let configuration = Self.configuration(sampleRate: sampleRate)
        let program = try await encode(configuration)
        let (out, statistics) = try align(stationEvents(configuration, program: program, seconds: 16), .standard)
        for index in 1...2 {
            let boundary = program.boundarySeconds(ofTrack: index)
            let change = try #require(out.title(SplitAudioTests.titles[index]))
            let announced = program.seconds(atStreamOffset: change.announcedPosition)
            #expect(announced >= boundary + 0.7 && announced < boundary + 1.2, "announced \(announced) s, boundary \(boundary) s")
            let cut = try SplitAudioTests.cutSeconds(out, SplitAudioTests.titles[index], program)
            // The silence in the stream: from the tone's end (plus the encoder's priming frame)
            // to the next track's first frame.
            #expect(cut > boundary - 1.5 && cut < boundary, "cut \(cut) s must be in the silence before \(boundary) s")
        }
        #expect(statistics.inSilence >= 2)
    }

    @Test("A hard cut (no silence) on AAC stays at the title")
    func hardCutStaysAtTheTitle() async throws {
        var configuration = StationConfiguration(metaint: 2000, trackSeconds: 3, titles: SplitAudioTests.titles)
        configuration.codec = .aac
        let program = try await encode(configuration)
        let (out, statistics) = try align(stationEvents(configuration, program: program, seconds: 10), .standard)
        for index in 1...2 {
            let change = try #require(out.title(SplitAudioTests.titles[index]))
            #expect(change.position == change.announcedPosition)
        }
        #expect(statistics.inSilence == 0)
    }
}
