import Foundation
import ICYWire
import Testing
@testable import TestStation

/// The soak's hostile "short metadata" mode, offline and exact: the test station's real LAME
/// audio re-muxed with titles, each title block cut inside its NUL padding (some or all of the
/// padding never comes, audio follows at once), as `tools/soak` does. Real audio matters: LAME
/// fills unused frame bytes with 0x55 ('U'), which reads as more title text, and digital
/// silence is NUL bytes, which read as more padding. A misjudged block end shifts every later
/// length byte: an audio byte goes as the length and the real zero length byte stays in the
/// audio, a one-byte change inside a frame of the right length that no frame check sees.
@Suite("Short metadata blocks on real audio")
struct ShortMetadataTests {
    static let metaint = 8192
    static let titles = [
        "Artist A - Song", "B - Another song (live)", "Ümlaut – Tïtle", "x - y",
        "Long artist name - Long song title here", "Artist - quote ' ; StreamUrl='x'; title",
    ]

    /// `audio` muxed at `metaint` with a title block after every `titleEvery`-th interval, each cut
    /// by 1...padding bytes (the soak's `Muxer._meta_block` with `short_meta`).
    static func hostileStream(_ audio: [UInt8], titleEvery: Int, random: inout SeededRandom) -> (stream: [UInt8], titles: [String]) {
        var stream: [UInt8] = []
        stream.reserveCapacity(audio.count + audio.count / 100)
        var sent: [String] = []
        var position = 0
        var interval = 0
        while position < audio.count {
            let end = min(audio.count, position + metaint)
            stream += audio[position..<end]
            position = end
            guard position < audio.count else { break }
            interval += 1
            guard interval % titleEvery == 0 else {
                stream.append(0)
                continue
            }
            let title = titles[sent.count % titles.count]
            sent.append(title)
            let text = Array("StreamTitle='\(title)';".utf8)
            let units = (text.count + 15) / 16
            let padding = units * 16 - text.count
            let missing = padding > 0 ? 1 + Int(random.next() % UInt64(padding)) : 0
            stream += [UInt8(units)] + text + [UInt8](repeating: 0, count: padding - missing)
        }
        return (stream, sent)
    }

    /// Every audio byte back, unchanged and in place, and every title, however the stream is
    /// split: the demuxer keeps its alignment across short blocks.
    @Test(arguments: [1, 2, 5])
    func everyAudioByteAndTitleAfterBlocksCutInTheirPadding(titleEvery: Int) throws {
        let program = try Fixtures.program.get()
        // 40 s of audio, 640 KB: 78 intervals of 8192 bytes, the loop's silences and tones.
        let audio = program.audio(from: 0, count: 40 * 16000)
        var failures: [String] = []
        for seed in 0..<Self.seedCount {
            var random = SeededRandom(state: UInt64(seed))
            let (stream, sent) = Self.hostileStream(audio, titleEvery: titleEvery, random: &random)
            var demuxer = ICYDemuxer(metaint: Self.metaint)
            var out: [UInt8] = []
            out.reserveCapacity(audio.count)
            var titles: [String] = []
            let onMetadata = { (block: MetadataBlock) in titles.append(StreamMetadata.parse(block.bytes).streamTitle ?? "?") }
            var index = 0
            while index < stream.count {
                let count = min(stream.count - index, 1 + Int(random.next() % 20000))
                stream[index..<(index + count)].withUnsafeBytes { chunk in
                    demuxer.consume(chunk, onAudio: { out.append(contentsOf: $0) }, onMetadata: onMetadata)
                }
                index += count
            }
            demuxer.finish(onAudio: { out.append(contentsOf: $0) }, onMetadata: onMetadata)
            if out != audio {
                let first = (0..<min(out.count, audio.count)).first { out[$0] != audio[$0] } ?? min(out.count, audio.count)
                failures.append("seed \(seed): \(out.count) bytes for \(audio.count), first difference at \(first)")
            } else if titles != sent {
                failures.append("seed \(seed): titles \(titles.filter { !sent.contains($0) }.prefix(3))")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of \(Self.seedCount): \(failures.prefix(5).joined(separator: "; "))")
    }

    /// `SHORT_META_SEEDS=500` for a longer run by hand.
    static let seedCount = Int(ProcessInfo.processInfo.environment["SHORT_META_SEEDS"] ?? "") ?? 25
}

/// A reproducible generator (Knuth's MMIX LCG, high bits): each seed is one fixed hostile stream.
struct SeededRandom {
    var state: UInt64
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 16
    }
}
