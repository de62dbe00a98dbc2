@testable import HLSWire
@testable import ICYWire
import Testing

@Suite struct TimedID3Tests {
    typealias F = TimedID3Fixtures

    @Test func readsTimestampTitleArtistAndUserText() throws {
        let tag = F.tag([
            F.transportTimestamp(0x1_2345_6789 | 0xFF00_0000_0000_0000),  // only 33 bits count
            F.text("TIT2", "Caf\u{E9} del Mar"), F.text("TPE1", "Energy 52"),
            F.userText("WXXX-ish", "value"), F.frame("APIC", [0, 1, 2]),
        ], padding: 100)
        let metadata = try #require(TimedID3(tag: tag))
        #expect(metadata.transportTimestamp == 0x1_2345_6789)
        #expect(metadata.title == "Caf\u{E9} del Mar")
        #expect(metadata.artist == "Energy 52")
        #expect(metadata.userTexts == [TimedID3.UserText(description: "WXXX-ish", value: "value")])
        #expect(metadata.streamTitle == "Energy 52 - Caf\u{E9} del Mar")
    }

    @Test func textEncodings() throws {
        let latin1 = F.frame("TIT2", [0, 0x43, 0x61, 0x66, 0xE9])
        let utf16BOM = F.frame("TPE1", [1, 0xFF, 0xFE, 0x41, 0x00, 0xE9, 0x00, 0x00, 0x00])
        let metadata = try #require(TimedID3(tag: F.tag([latin1, utf16BOM])))
        #expect(metadata.title == "Caf\u{E9}")
        #expect(metadata.artist == "A\u{E9}")
        let utf16BE = F.frame("TIT2", [2, 0x00, 0x42, 0x00, 0x43])
        #expect(TimedID3(tag: F.tag([utf16BE]))?.title == "BC")
    }

    @Test func version3WithUnsynchronisation() throws {
        // 0xFF 0x00 in the stored bytes is a 0xFF in the real ones; v2.3 frame sizes count the real ones.
        let frame = Array("TIT2".utf8) + F.bigEndian32(4) + [0, 0] + [0, 0x41, 0xFF, 0x00, 0x42]
        let tag = F.tag([frame], version: 3, flags: 0x80)
        #expect(TimedID3(tag: tag)?.title == "A\u{FF}B")
    }

    @Test func bombsAndDamageCostNothing() {
        // A compressed frame claiming to inflate hugely is skipped, not inflated.
        let compressed = F.frame("TIT2", [0x00, 0x10, 0x00, 0x00] + [0x78, 0x9C] + [UInt8](repeating: 0, count: 20), flags: [0, 0x09])
        let withBomb = TimedID3(tag: F.tag([compressed, F.text("TPE1", "Still Read")]))
        #expect(withBomb?.title == nil)
        #expect(withBomb?.artist == "Still Read")
        // A frame size past the tag ends the reading there.
        var damaged = F.tag([F.text("TIT2", "ok"), F.text("TPE1", "x")])
        damaged[27] = 0x7F  // the second frame's size (after the header and the 13-byte TIT2), inflated
        #expect(TimedID3(tag: damaged)?.title == "ok")
        #expect(TimedID3(tag: damaged)?.artist == nil)
        // A tag larger than the bound, or cut short, is not read.
        let huge = Array("ID3".utf8) + [4, 0, 0] + F.syncsafe(10_000_000)
        #expect(TimedID3(tag: huge + [UInt8](repeating: 0, count: 100)) == nil)
        #expect(TimedID3(tag: F.tag([F.text("TIT2", "cut")]).dropLast()) == nil)
        // Many tiny frames: at most maxFrames are looked at.
        let many = F.tag((0..<1000).map { _ in F.frame("TXXX", [3, 0x61, 0, 0x62]) })
        #expect(TimedID3(tag: many)?.userTexts.count == 16)
    }

    @Test func packedAudioSegmentHead() throws {
        let tag = F.titleTag(artist: "A", title: "T", timestamp: 900_000)
        let adts: [UInt8] = [0xFF, 0xF1, 0x50, 0x80, 0x01, 0x1F, 0xFC, 1, 2]
        let segment = tag + adts
        #expect(PackedAudioSegmentHead.read(segment.prefix(9)) == nil)
        #expect(PackedAudioSegmentHead.read(segment.prefix(tag.count - 1)) == nil)
        let head = try #require(try PackedAudioSegmentHead.read(segment)?.get())
        #expect(head.audioOffset == tag.count)
        #expect(head.metadata.transportTimestamp == 900_000)
        #expect(head.metadata.streamTitle == "A - T")
        #expect(PackedAudioSegmentHead.read(adts + tag) == .failure(.noTag))
        let big = Array("ID3".utf8) + [4, 0, 0] + F.syncsafe(1_000_000)
        #expect(PackedAudioSegmentHead.read(big) == .failure(.tagTooLarge(length: 1_000_010)))
    }
}
