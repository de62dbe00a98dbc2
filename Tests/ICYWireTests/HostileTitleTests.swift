@testable import ICYWire
import SplitFixtures
import Testing

/// Titles are whatever bytes a station puts between the quotes: NUL, C0 and C1 controls, ESC
/// sequences, broken UTF-8, `';` inside the value, up to the 4080 bytes a length byte allows.
/// None of that may make the demuxer doubt the length byte (only what follows a block's
/// declared end may), so every title comes through, every audio byte stays audio, and the
/// parser keeps the whole value for the inert renderers downstream.
@Suite struct HostileTitleTests {
    /// A metadata block as a station sends it, and the title the parser must find in it.
    struct HostileTitle: CustomStringConvertible {
        /// Length byte, text, NUL padding.
        let block: [UInt8]
        let expected: String?
        var description: String { expected.map { InertText.render($0, maxUTF8Bytes: 60) } ?? "no StreamTitle" }

        /// `StreamTitle='value';` padded to its 16-byte units.
        init(_ value: [UInt8], _ expected: String) {
            self.init(block: Array("StreamTitle='".utf8) + value + Array("';".utf8), expected: expected)
        }

        init(_ text: String) {
            self.init(Array(text.utf8), text)
        }

        /// `text` as it is, padded to its 16-byte units (at most 255 of them).
        init(block text: [UInt8], expected: String?) {
            let units = (text.count + 15) / 16
            self.block = [UInt8(units)] + text + [UInt8](repeating: 0, count: units * 16 - text.count)
            self.expected = expected
        }
    }

    static let longValue: [UInt8] = {
        // 13 bytes of `StreamTitle='`, the value, 2 of `';`: 4080 bytes, 255 units, no padding.
        let pattern: [UInt8] = [0x1B] + Array("[31m".utf8) + [0, 0x07, 0x85, 0x9B, 0xC3, 0x28] + Array("';x ".utf8)
        return (0..<(4080 - 15)).map { pattern[$0 % pattern.count] }
    }()

    static let titles: [HostileTitle] = [
        HostileTitle(Array("A\u{0}B - NUL inside".utf8), "A\u{0}B - NUL inside"),
        HostileTitle("\u{1B}[31mRed\u{1B}[0m - ESC sequence"),
        HostileTitle("\u{1B}]0;window title\u{07}\u{1B}]52;c;Y2xpcA==\u{07} - OSC"),
        HostileTitle("Bell\u{07} - every C0: " + String((1...0x1F).map { Character(Unicode.Scalar(UInt8($0))) })),
        HostileTitle("C1 as UTF-8: \u{85}\u{9B}31m\u{9D}x\u{9C}"),
        HostileTitle(Array("C1 bytes: ".utf8) + (0x80...0x9F).map { UInt8($0) },
                     TextDecoding.decode(Array("C1 bytes: ".utf8) + (0x80...0x9F).map { UInt8($0) }, fallback: .cp1252)),
        HostileTitle(Array("broken UTF-8: ".utf8) + [0xC3, 0x28, 0xFF, 0xFE, 0xED, 0xA0, 0x80, 0xF0, 0x9F],
                     TextDecoding.decode(Array("broken UTF-8: ".utf8) + [0xC3, 0x28, 0xFF, 0xFE, 0xED, 0xA0, 0x80, 0xF0, 0x9F], fallback: .cp1252)),
        HostileTitle("Rock 'n' Roll';s Best; Part=2 - it';s"),
        HostileTitle(Array("ends in NULs\u{0}\u{0}\u{0}".utf8), "ends in NULs\u{0}\u{0}\u{0}"),
        // `';` and a NUL is where padding begins: what follows is not the title, but neither
        // does it make the block short.
        HostileTitle(Array("a';\u{0}\u{0}\u{0}\u{0}b - quote, semicolon, NULs".utf8), "a"),
        HostileTitle(Array("\u{0}".utf8), "\u{0}"),
        HostileTitle(longValue, TextDecoding.decode(longValue, fallback: .cp1252)),
        // A server that cut its 4080 bytes off before the closing quote.
        HostileTitle(block: Array("StreamTitle='".utf8) + longValue + Array("\u{1B}\u{0}".utf8),
                     expected: TextDecoding.decode(longValue + [0x1B], fallback: .cp1252)),
        // A server's own format, no keys, with control bytes in it.
        HostileTitle(block: Array("Artist\u{7} - \u{1B}[1mTitle\u{1B}[0m without keys".utf8), expected: nil),
    ]

    @Test(arguments: titles)
    func parserKeepsTheWholeValue(title: HostileTitle) {
        let metadata = StreamMetadata.parse(title.block.dropFirst(), charset: .cp1252)
        #expect(metadata.streamTitle == title.expected)
        #expect(metadata.fields.count == (title.expected == nil ? 0 : 1))
    }

    @Test func parserKeepsAFieldAfterAHostileValue() {
        let block = Array("StreamTitle='x\u{0}\u{1B}[2J';s';StreamUrl='http://a/?b=1;c=2';".utf8) + [0, 0, 0]
        let metadata = StreamMetadata.parse(block)
        #expect(metadata.streamTitle == "x\u{0}\u{1B}[2J';s")
        #expect(metadata.streamURL == "http://a/?b=1;c=2")
    }

    /// MP3 frames with a hostile title after every interval (one of every title, twice over,
    /// with a "no change" between some), demuxed and framed in every split: no block is taken
    /// as short, every title comes out in order at its interval, every frame and byte of the
    /// audio comes out as sent.
    @Test(arguments: [1000, 417, 4500])
    func everyTitleAndEveryAudioByteInEverySplit(metaint: Int) {
        // Enough intervals for every title twice, one in five a "no change".
        let intervals = Self.titles.count * 2 * 5 / 4 + 3
        let frames = Fixtures.mp3Frames(intervals * metaint / 417 + 2)
        let audio = Array(frames.joined())
        var stream: [UInt8] = []
        var sent: [String?] = []
        var sentBlocks: [[UInt8]] = []
        var blockPositions: [Int] = []
        var offset = 0
        var interval = 0
        while offset + metaint < audio.count {
            stream += audio[offset..<(offset + metaint)]
            offset += metaint
            interval += 1
            if interval % 5 == 4 {
                stream.append(0)
            } else {
                let title = Self.titles[sent.count % Self.titles.count]
                stream += title.block
                sent.append(title.expected)
                sentBlocks.append(Array(title.block.dropFirst()))
                blockPositions.append(offset)
            }
        }
        stream += audio[offset...]
        #expect(sent.count >= Self.titles.count * 2)

        var reference: (audio: [UInt8], blocks: [MetadataBlock], shortBlocks: Int, packets: Int)?
        for chunks in Splits.all(stream, randomCount: 8) {
            var demuxer = ICYDemuxer(metaint: metaint)
            var framer = AudioFramer()
            var out: [UInt8] = []
            var blocks: [MetadataBlock] = []
            var packets = 0
            let onAudio = { (bytes: UnsafeRawBufferPointer) in
                out += bytes
                framer.push(bytes) { if case .packet = $0 { packets += 1 } }
            }
            let onMetadata = { (block: MetadataBlock) in blocks.append(block) }
            for chunk in chunks {
                chunk.withUnsafeBytes { demuxer.consume($0, onAudio: onAudio, onMetadata: onMetadata) }
            }
            demuxer.finish(onAudio: onAudio, onMetadata: onMetadata)
            framer.finish { if case .packet = $0 { packets += 1 } }
            if let reference {
                let same = reference.audio == out && reference.blocks == blocks
                    && reference.shortBlocks == demuxer.shortBlockCount && reference.packets == packets
                #expect(same, "the output depends on the split (\(chunks.count) chunks)")
            } else {
                reference = (out, blocks, demuxer.shortBlockCount, packets)
            }
        }
        guard let reference else { return }
        #expect(reference.shortBlocks == 0, "a block was taken as shorter than its length byte")
        let sameAudio = reference.audio == audio  // a Bool: a failure does not print the audio
        #expect(sameAudio, "\(reference.audio.count) audio bytes out for \(audio.count) in")
        #expect(reference.packets == frames.count)
        let sameBlocks = reference.blocks.map(\.bytes) == sentBlocks
        #expect(sameBlocks, "\(reference.blocks.count) blocks for \(sentBlocks.count), not as sent")
        let titles = reference.blocks.map { StreamMetadata.parse($0.bytes, charset: .cp1252).streamTitle }
        #expect(titles == sent, "\(titles.count) titles for \(sent.count)")
        #expect(reference.blocks.map(\.position) == blockPositions)
    }
}
