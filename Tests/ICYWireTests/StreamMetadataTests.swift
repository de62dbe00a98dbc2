@testable import ICYWire
import SplitFixtures
import Testing

@Suite struct StreamMetadataTests {
    private func parse(_ text: String, charset: TextCharset = .utf8) -> StreamMetadata {
        StreamMetadata.parse(Fixtures.metadataBlock(text).dropFirst(), charset: charset)
    }

    @Test func apostrophesSemicolonsAndEqualsSurvive() {
        let metadata = parse("StreamTitle='Guns N' Roses - Sweet Child o' Mine';StreamUrl='http://x/?a=1;b=2';")
        #expect(metadata.streamTitle == "Guns N' Roses - Sweet Child o' Mine")
        #expect(metadata.streamURL == "http://x/?a=1;b=2")
        #expect(metadata.fields.map(\.key) == ["StreamTitle", "StreamUrl"])
    }

    @Test func valuesThatLookLikeTerminators() {
        #expect(parse("StreamTitle='Simon &amp; Garfunkel - Mrs. Robinson';").streamTitle == "Simon &amp; Garfunkel - Mrs. Robinson")
        #expect(parse("StreamTitle='a=b; c='d'';").streamTitle == "a=b; c='d'")
        #expect(parse("StreamTitle='It';s';StreamUrl='';").streamTitle == "It';s")
        #expect(parse("StreamTitle='x';  ").streamTitle == "x")
        #expect(parse("StreamTitle='no semicolon'").streamTitle == "no semicolon")
        #expect(parse("streamtitle='lower';").streamTitle == "lower")
    }

    @Test func emptyTitleIsPresent() {
        let metadata = parse("StreamTitle='';")
        #expect(metadata.streamTitle == "")
        #expect(metadata.streamURL == nil)
        #expect(parse("StreamTitle='';StreamUrl='';").streamTitle == "")
    }

    @Test func nulPaddingAndWhatFollowsItAreIgnored() {
        let block = Array("StreamTitle='A - B';".utf8) + [0, 0, 0] + Array("StreamUrl='junk';".utf8) + [0, 0]
        let metadata = StreamMetadata.parse(block)
        #expect(metadata.streamTitle == "A - B")
        #expect(metadata.streamURL == nil)
    }

    @Test func legacyCharsets() {
        // 0xE9 é, 0x80 €, 0x93/0x94 curly quotes: not valid UTF-8, so CP1252.
        let bytes = Array("StreamTitle='Caf".utf8) + [0xE9, 0x20, 0x80, 0x20, 0x93, 0x61, 0x94] + Array("';".utf8)
        #expect(StreamMetadata.parse(bytes).streamTitle == "Café € \u{201C}a\u{201D}")
        #expect(StreamMetadata.parse(bytes, charset: .cp1252).streamTitle == "Café € \u{201C}a\u{201D}")
        #expect(StreamMetadata.parse(bytes, charset: .latin1).streamTitle == "Café \u{80} \u{93}a\u{94}")
        // "Кино - Группа крови" in CP1251.
        let cyrillic: [UInt8] = [0xCA, 0xE8, 0xED, 0xEE, 0x20, 0x2D, 0x20, 0xC3, 0xF0, 0xF3, 0xEF, 0xEF, 0xE0,
                                 0x20, 0xEA, 0xF0, 0xEE, 0xE2, 0xE8]
        let cp1251Block = Array("StreamTitle='".utf8) + cyrillic + Array("';".utf8)
        #expect(StreamMetadata.parse(cp1251Block, charset: .cp1251).streamTitle == "Кино - Группа крови")
        #expect(TrackInfo(streamTitle: "Кино - Группа крови").artist == "Кино")
        // Valid UTF-8 wins over the configured charset.
        #expect(parse("StreamTitle='Björk – Jóga';", charset: .cp1251).streamTitle == "Björk – Jóga")
    }

    @Test func decodingTables() {
        #expect(TextDecoding.decode([0x80, 0x8A, 0x9F, 0x81], fallback: .cp1252) == "€ŠŸ\u{81}")
        #expect(TextDecoding.decode([0xA8, 0xB8, 0xB9, 0xC0, 0xFF, 0x88], fallback: .cp1251) == "Ёё\u{2116}Ая€")
        #expect(TextDecoding.decode([0xE9], fallback: .utf8) == "é")
        #expect(TextDecoding.decode([UInt8](), fallback: .utf8) == "")
        #expect(TextCharset(name: "UTF8") == .utf8)
        #expect(TextCharset(name: "ISO-8859-1") == .latin1)
        #expect(TextCharset(name: "latin1") == .latin1)
        #expect(TextCharset(name: "cp1252") == .cp1252)
        #expect(TextCharset(name: "Windows-1251") == .cp1251)
        #expect(TextCharset(name: "koi8-r") == nil)
    }

    @Test func maximalBlock() {
        let title = String(repeating: "ab';", count: 1000)
        let text = "StreamTitle='" + title + "';"
        let block = Array(text.utf8.prefix(4080)) + [UInt8](repeating: 0, count: max(0, 4080 - text.utf8.count))
        #expect(block.count == 4080)
        let metadata = StreamMetadata.parse(block)
        #expect(metadata.streamTitle?.hasPrefix("ab';ab") == true)
    }

    @Test func garbageNeverCrashes() {
        var generator = SplitMix64(seed: 5)
        for length in [0, 1, 2, 15, 16, 255, 4080] {
            for _ in 0..<20 {
                _ = StreamMetadata.parse(generator.bytes(length))
            }
        }
        for text in ["'", "=", "';", "StreamTitle=", "StreamTitle='", "=';=';", ";;;;", "Key=value;Other=x", "StreamTitle='a';junk;StreamUrl='u';"] {
            _ = parse(text)
        }
        #expect(parse("Key=value;Other=x").fields == [.init(key: "Key", value: "value"), .init(key: "Other", value: "x")])
        // Junk after a value is not a key, so by the rule the value runs on to the next real end.
        #expect(parse("StreamTitle='a';junk;StreamUrl='u';").streamTitle == "a';junk;StreamUrl='u")
        #expect(parse("StreamTitle='").streamTitle == "")
    }

    @Test func trackInfoSplitsArtistAndTitle() {
        let info = TrackInfo(streamTitle: "  Daft Punk - One More Time - Radio Edit ", url: "http://x")
        #expect(info.artist == "Daft Punk")
        #expect(info.title == "One More Time - Radio Edit")
        #expect(info.url == "http://x")
        #expect(info.raw == "  Daft Punk - One More Time - Radio Edit ")
        #expect(TrackInfo(streamTitle: "Björk – Jóga").artist == "Björk")
        #expect(TrackInfo(streamTitle: "A – B - C").title == "B - C")
        #expect(TrackInfo(streamTitle: "Station ID").artist == nil)
        #expect(TrackInfo(streamTitle: "Station ID").title == "Station ID")
        #expect(TrackInfo(streamTitle: "AC-DC").artist == nil)
        #expect(TrackInfo(streamTitle: "").title == "")
        #expect(TrackInfo(streamTitle: " - Title").artist == nil)
        let metadata = parse("StreamTitle='X - Y';StreamUrl='u';")
        #expect(TrackInfo(metadata) == TrackInfo(streamTitle: "X - Y", url: "u"))
    }
}
