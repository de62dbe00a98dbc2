@testable import AirtapKit
import Foundation
import Testing

/// Made-up spectra: a "song" is a band profile (dB) with a beat and frame-to-frame noise, so the
/// finder is tested without audio, as `SplitPointFinder` is over made-up levels.
struct MadeUpSong {
    var profile: [Float]
    /// Frames between beats, and how much louder (dB) the low bands are on one.
    var beatFrames = 20
    var beatDecibels: Float = 8
    var noiseDecibels: Float = 3

    static func profile(tilt: Float, bump: Int, height: Float = 10) -> [Float] {
        (0..<FrameSpectrum.bandCount).map { band in 60 - tilt * Float(band) + (band == bump || band == bump + 1 ? height : 0) }
    }

    /// Frame `index` of the song (the beat counted from the song's own first frame).
    func frame(_ index: Int, random: inout SplitMix) -> [Float] {
        profile.enumerated().map { band, level in
            let beat: Float = index % beatFrames < 2 && band < 3 ? beatDecibels : 0
            return level + beat + noiseDecibels * (Float(random.next() % 2001) / 1000 - 1)
        }
    }
}

/// A small seeded generator: the same made-up audio every run.
struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Split: the change in the music")
struct MusicChangeFinderTests {
    /// 26 ms frames, as MP3 at 44.1 kHz.
    static let frameSeconds = 1152.0 / 44100
    static let finder = MusicChangeFinder(frameSeconds: frameSeconds)
    static let songA = MadeUpSong(profile: MadeUpSong.profile(tilt: 2, bump: 2))
    static let songB = MadeUpSong(profile: MadeUpSong.profile(tilt: 2, bump: 7), beatFrames: 17)

    static func frames(_ seconds: Double) -> Int { Int((seconds / frameSeconds).rounded()) }

    /// `a` then `b`, crossfaded over `fade` frames (amplitudes ramped linearly, as ffmpeg's
    /// `acrossfade` with `tri` curves does; the powers of two unrelated signals add), as bands.
    static func join(_ a: MadeUpSong, _ b: MadeUpSong, total: Int, at boundary: Int, fade: Int = 0,
                     bGain: (Int) -> Float = { _ in 0 }, seed: UInt64 = 1) -> [Float] {
        var random = SplitMix(state: seed)
        var bands: [Float] = []
        let fadeStart = boundary - fade / 2
        for index in 0..<total {
            let first = a.frame(index, random: &random)
            let second = b.frame(index - fadeStart, random: &random).map { $0 + bGain(index - fadeStart) }
            let weight = fade > 0 ? min(max(Float(index - fadeStart) / Float(fade), 0), 1) : (index < boundary ? 0 : 1)
            for band in 0..<FrameSpectrum.bandCount {
                let power = (1 - weight) * (1 - weight) * pow(10, first[band] / 10) + weight * weight * pow(10, second[band] / 10)
                bands.append(10 * log10(max(power, 1e-12)))
            }
        }
        return bands
    }

    @Test(arguments: [-5.0, -2, 0, 3, 5])
    func aHardCutIsFoundToTheFrameWhereverTheTitleIs(titleOffset: Double) throws {
        let total = Self.frames(16), boundary = Self.frames(8)
        let bands = Self.join(Self.songA, Self.songB, total: total, at: boundary)
        let change = try #require(Self.finder.choose(bands: bands, reference: boundary + Self.frames(titleOffset)))
        #expect(change.kind == .cut)
        #expect(abs(change.boundary - boundary) <= 1, "cut at \(change.boundary), the songs change at \(boundary)")
    }

    @Test(arguments: [-5.0, 0, 5])
    func aThreeSecondCrossfadeIsCutInItsMiddleHalf(titleOffset: Double) {
        let total = Self.frames(16), middle = Self.frames(8), fade = Self.frames(3)
        let bands = Self.join(Self.songA, Self.songB, total: total, at: middle, fade: fade)
        // A title already in the fade's middle may stay where it is.
        let change = Self.finder.choose(bands: bands, reference: middle + Self.frames(titleOffset))
        if titleOffset != 0 { #expect(change != nil) }
        let cut = change?.boundary ?? middle + Self.frames(titleOffset)
        #expect(abs(cut - middle) <= fade / 4, "cut at \(cut), the fade's middle is \(middle)")
    }

    @Test(arguments: [-5.0, 0, 5])
    func aSixSecondCrossfadeIsCutInItsMiddleHalfOrAtTheTitle(titleOffset: Double) {
        // Not always found (its novelty spreads over seconds); never a cut outside its middle half.
        let total = Self.frames(16), middle = Self.frames(8), fade = Self.frames(6)
        let bands = Self.join(Self.songA, Self.songB, total: total, at: middle, fade: fade)
        if let change = Self.finder.choose(bands: bands, reference: middle + Self.frames(titleOffset)) {
            #expect(abs(change.boundary - middle) <= fade / 4, "cut at \(change.boundary), the fade's middle is \(middle)")
        }
    }

    @Test func oneSongThroughTheWindowIsNoChange() {
        let bands = Self.join(Self.songA, Self.songA, total: Self.frames(16), at: Self.frames(16))
        #expect(Self.finder.choose(bands: bands, reference: Self.frames(8)) == nil)
    }

    @Test func talkOverTheMusicIsNoChange() {
        // A voice comes and goes over the same song: mid bands up 4 dB for a second or so at a time.
        var random = SplitMix(state: 7)
        var bands: [Float] = []
        for index in 0..<Self.frames(16) {
            let talking = (index / Self.frames(1.3)) % 2 == 1
            bands += Self.songA.frame(index, random: &random).enumerated().map { band, value in
                value + (talking && (4...7).contains(band) ? 4 : 0)
            }
        }
        #expect(Self.finder.choose(bands: bands, reference: Self.frames(8)) == nil)
    }

    @Test func twoSongsOfTheSameKeyAndTempoAreNeverCutWrong() {
        // The same beat and the same bass; the second song's chords sit 6 dB higher in two bands.
        var second = Self.songA
        second.profile[5] += 6
        second.profile[6] += 6
        let total = Self.frames(16), boundary = Self.frames(7)
        let bands = Self.join(Self.songA, second, total: total, at: boundary, seed: 3)
        // Too alike to be a clear change for the finder as tuned: no cut at all rather than a wrong one.
        if let change = Self.finder.choose(bands: bands, reference: Self.frames(11)) {
            #expect(abs(change.boundary - boundary) <= 4, "cut at \(change.boundary), the songs change at \(boundary)")
        }
    }

    @Test func aFadeIntoAQuietStartIsCutInsideTheFade() throws {
        // The next song starts 20 dB down and comes up over its first 4 s.
        let total = Self.frames(16), middle = Self.frames(8), fade = Self.frames(4)
        let quietStart = Self.frames(4)
        let bands = Self.join(Self.songA, Self.songB, total: total, at: middle, fade: fade) { index in
            index < quietStart ? -20 + 20 * Float(max(index, 0)) / Float(quietStart) : 0
        }
        // The title 4 s early; the cut lands inside the fade, short of its middle half (the quiet
        // start moves the spectral change late).
        let change = try #require(Self.finder.choose(bands: bands, reference: middle - Self.frames(4)))
        #expect(abs(change.boundary - middle) <= fade / 2, "cut at \(change.boundary), the fade's middle is \(middle)")
    }

    @Test func aJingleShorterThanTheWindowCutsAtTheEdgeNearestTheTitle() throws {
        // Song A, a 3 s jingle, song B: two changes in the window; each title takes its own.
        let jingle = MadeUpSong(profile: MadeUpSong.profile(tilt: 1, bump: 9, height: 14), beatFrames: 9)
        let total = Self.frames(16), start = Self.frames(6.5), end = Self.frames(9.5)
        var bands = Self.join(Self.songA, jingle, total: end, at: start, seed: 5)
        bands += Array(Self.join(Self.songB, Self.songB, total: total - end, at: total, seed: 6))
        let first = try #require(Self.finder.choose(bands: bands, reference: start - Self.frames(1)))
        #expect(abs(first.boundary - start) <= 1)
        let second = try #require(Self.finder.choose(bands: bands, reference: end + Self.frames(1.5)))
        #expect(abs(second.boundary - end) <= 1)
    }

    @Test func tooLittleAudioOrNoSpectraIsNoChange() {
        #expect(Self.finder.choose(bands: [], reference: 0) == nil)
        #expect(Self.finder.choose(bands: [Float](repeating: 40, count: FrameSpectrum.bandCount * 10), reference: 5) == nil)
        #expect(MusicChangeFinder(frameSeconds: 0).choose(bands: [Float](repeating: 40, count: 1200), reference: 5) == nil)
    }
}

@Suite("Split: a frame's spectrum")
struct FrameSpectrumTests {
    /// A sine of `hertz` at 44.1 kHz, one MP3 frame long, interleaved over `channels`.
    static func tone(_ hertz: Double, channels: Int, amplitude: Double = 8000) -> [Int16] {
        (0..<1152 * channels).map { Int16(amplitude * sin(2 * Double.pi * hertz * Double($0 / channels) / 44100)) }
    }

    static func bands(of samples: [Int16], channels: Int, split: Int? = nil) -> [Float] {
        var spectrum = FrameSpectrum()
        spectrum.start(sampleRate: 44100, channels: channels, samplesPerFrame: 1152 * channels)
        samples.withUnsafeBufferPointer { all in
            let cut = split ?? all.count
            spectrum.add(UnsafeBufferPointer(rebasing: all[..<cut]), offset: 0)
            if cut < all.count { spectrum.add(UnsafeBufferPointer(rebasing: all[cut...]), offset: cut) }
        }
        var bands = [Float](repeating: -1, count: FrameSpectrum.bandCount)
        bands.withUnsafeMutableBufferPointer { spectrum.finishFrame(into: $0) }
        return bands
    }

    @Test(arguments: [(370.0, 3), (1000, 6), (2000, 8), (3500, 10)])
    func aToneLightsItsOwnBand(hertz: Double, band: Int) {
        let bands = Self.bands(of: Self.tone(hertz, channels: 2), channels: 2)
        let loudest = bands.indices.max { bands[$0] < bands[$1] }
        #expect(loudest == band, "\(bands)")
        #expect(bands[band] > bands[(band + 4) % FrameSpectrum.bandCount] + 20)
    }

    @Test func theSamplesMayArriveInPieces() {
        let samples = Self.tone(700, channels: 2)
        #expect(Self.bands(of: samples, channels: 2) == Self.bands(of: samples, channels: 2, split: 999))
    }

    @Test func silenceIsTheFloor() {
        let bands = Self.bands(of: [Int16](repeating: 0, count: 1152), channels: 1)
        #expect(bands.allSatisfy { $0 == FrameSpectrum.floorDecibels })
    }
}
