import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import AudioFingerprinting
import Testing

/// The matcher's arithmetic on made-up fingerprints: no audio, no index.
@Suite struct FingerprintMatcherTests {
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state
        }
    }

    static func values(_ count: Int, seed: UInt64) -> [UInt32] {
        var generator = Generator(state: seed)
        return (0..<count).map { _ in UInt32.random(in: .min ... .max, using: &generator) }
    }

    /// `values` with every bit flipped with probability `rate`.
    static func noisy(_ values: [UInt32], rate: Double, seed: UInt64) -> [UInt32] {
        var generator = Generator(state: seed)
        return values.map { value in
            var flips: UInt32 = 0
            for bit in 0..<32 where Double.random(in: 0..<1, using: &generator) < rate { flips |= 1 << bit }
            return value ^ flips
        }
    }

    @Test func theSameAudioSecondsLaterAndNoisyMatchesAtItsOffset() {
        let song = Self.values(900, seed: 1)
        // Tuned in 40 items (5 s) later, through another encoder.
        let query = Self.noisy(Array(song[40...]), rate: 0.1, seed: 2)
        let alignment = FingerprintMatcher.match(query, song, near: 39)
        #expect(alignment?.offset == 40)
        #expect((alignment?.bitErrorRate ?? 1) < 0.15)
    }

    @Test func unrelatedAudioOrTooShortAnOverlapNeverMatches() {
        let song = Self.values(900, seed: 1)
        for offset in -50...50 {
            #expect(FingerprintMatcher.match(Self.values(900, seed: 3), song, near: offset) == nil)
        }
        // The same audio, but only 60 items (7 s) of it overlap: a jingle's length decides nothing.
        #expect(FingerprintMatcher.match(Array(song[..<60]), song, near: 0) == nil)
        // And an overlap under half of the shorter one.
        #expect(FingerprintMatcher.match(Array(song[..<400]), song, near: 300) == nil)
    }

    @Test func candidatesNeedTwoHitsAlongOneAlignmentAndComeMostVotedFirst() {
        let hits: [(track: Int64, position: Int, queryPosition: Int)] = [
            (1, 100, 10), (1, 121, 30),          // track 1: offsets 90 and 91, one alignment
            (2, 50, 10), (2, 400, 200),          // track 2: two hits, unrelated offsets
            (3, 20, 0), (3, 40, 20), (3, 60, 40), // track 3: three hits at offset 20
        ]
        let candidates = FingerprintMatcher.candidates(from: hits, limit: 8)
        #expect(candidates.map(\.track) == [3, 1])
        #expect(candidates.first?.offset == 20)
        #expect(FingerprintMatcher.candidates(from: hits, limit: 1).map(\.track) == [3])
    }

    @Test func termsAreSampledByContentAndEachCountsOnce() {
        let values: [UInt32] = [0x0000_0FFF, 0x0000_8000, 0x0000_8123, 0x0001_0000, 0x0000_1000]
        // Top 20 bits: 0, 8, 8 (again), 16, 1 (not a multiple of 8).
        let terms = FingerprintMatcher.terms(of: Fingerprint(values: values))
        #expect(terms.map(\.term) == [0, 8, 16])
        #expect(terms.map(\.position) == [0, 1, 3])
    }
}
