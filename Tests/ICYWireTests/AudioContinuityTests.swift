@testable import ICYWire
import SplitFixtures
import Testing

/// The audio's own witness to where a metadata block ended: the frames or Ogg pages before the
/// block say where the next header starts, and only the real end puts one there.
@Suite struct AudioContinuityTests {
    enum Stream: String, CaseIterable {
        case mp3, adts, ogg

        var audio: [UInt8] {
            switch self {
            case .mp3: Array(Fixtures.mp3Frames(14).joined())
            case .adts: Array((0..<14).map { Fixtures.adtsFrame(length: 300 + $0 * 7, seed: $0) }.joined())
            case .ogg: Array(OggFixtures.link(serial: 1, codec: .vorbis, title: "A", audioPages: 6).joined())
            }
        }
    }

    @Test(arguments: Stream.allCases)
    func onlyTheRealEndContinuesTheAudio(stream: Stream) throws {
        let audio = stream.audio
        let block = Array("StreamTitle='x';".utf8) + [UInt8](repeating: 0, count: 16)
        for cut in stride(from: 2100, to: 3400, by: 37) {
            let tail = Array(audio[..<cut].suffix(AudioContinuity.tailLength))
            let continuity = try #require(AudioContinuity(tail: tail), "no chain before byte \(cut)")
            let bytes = block + audio[cut...]
            #expect(continuity.continues(after: block.count, in: bytes, limit: bytes.count, tail: tail) == true, "cut at \(cut)")
            for shift in 1...15 {
                #expect(continuity.continues(after: block.count - shift, in: bytes, limit: bytes.count, tail: tail) == false,
                        "cut at \(cut), \(shift) bytes early")
                #expect(continuity.continues(after: block.count + shift, in: bytes, limit: bytes.count, tail: tail) == false,
                        "cut at \(cut), \(shift) bytes late")
            }
        }
    }

    @Test func noChainInBytesThatAreNotAudio() {
        var generator = SplitMix64(seed: 3)
        #expect(AudioContinuity(tail: generator.bytes(8192).map { $0 == 0xFF ? 0 : $0 }) == nil)
        #expect(AudioContinuity(tail: Array(Fixtures.mp3Frames(1).joined())) == nil, "one frame alone is no chain")
    }
}
