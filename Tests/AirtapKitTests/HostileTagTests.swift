import AirtapTestSupport
import Foundation
import ICYWire
import ID3Tagging
@testable import TestStation
import Testing

/// zlib-compressed ID3 frames in the stream. A compressed frame declares its
/// inflated size and libid3tag allocates it: a small tag could become a 64 MiB title, in memory,
/// in every log line and in every recorded file's tag.
@Suite("Hostile ID3 tags")
struct HostileTagTests {
    @Test("A compressed TIT2 within the limits is inflated by libid3tag, and its text cut to 4 KiB on a character boundary")
    func compressedTitleIsCut() throws {
        let tag = CompressedID3.textTag(prefix: "Big €", runCount: 60_000)
        #expect(tag.count < 5000, "the fixture is a real compressed frame: \(tag.count) bytes")
        let frames = try tag.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }
        let title = try #require(frames?.title)
        #expect(title.hasPrefix("Big €AAAA"))
        #expect(title.utf8.count == ID3Reader.maxTextBytes)
        #expect(title.allSatisfy { $0 == "A" || "Big €".contains($0) })
    }

    @Test("Text is cut on a character boundary, never inside one")
    func cutOnCharacterBoundary() throws {
        let long = "a" + String(repeating: "€", count: 3000)  // 3-byte characters, off by one
        let tag = ID3Writer.render(ID3TextFrames([(id: "TIT2", text: long)]))
        let title = try #require(tag.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }?.title)
        #expect(title.utf8.count <= ID3Reader.maxTextBytes && title.utf8.count > ID3Reader.maxTextBytes - 3)
        #expect(long.hasPrefix(title))
    }

    @Test("A bomb (16 MiB declared, about 100 KB on the wire) is refused before libid3tag inflates it")
    func bombIsRefused() throws {
        let bomb = CompressedID3.textTag(runCount: 16 << 20)
        #expect(bomb.count < 150_000)
        #expect(throws: ID3TagError.frameInflatesTooFar(frame: "TIT2", declared: (16 << 20) + 1, limit: 64 * 1024)) {
            try bomb.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }
        }
        // Many frames each under the frame limit still add up: the tag's total is bounded too.
        var body: [UInt8] = []
        for _ in 0..<8 {
            let one = CompressedID3.textTag(runCount: 60_000)
            body += one[10...]
        }
        let many = Array("ID3".utf8) + [4, 0, 0] + CompressedID3.syncsafe(body.count) + body
        #expect(throws: ID3TagError.tagInflatesTooFar(declared: 5 * 60_001, limit: 256 * 1024)) {
            try many.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }
        }
    }

    @Test("ID3v2.3: a compressed frame within the limits is read (plain and unsynchronised); a bomb is refused")
    func version23() throws {
        for unsynchronised in [false, true] {
            // 65530 + 5 = 0xFFFF inflated bytes: the size field holds FF FF, which unsynchronisation escapes.
            let tag = CompressedID3.textTagV23(prefix: "Old ", runCount: 65530, unsynchronised: unsynchronised)
            #expect(unsynchronised == (tag.count > CompressedID3.textTagV23(prefix: "Old ", runCount: 65530).count))
            let title = try tag.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }?.title
            #expect(title == "Old " + String(repeating: "A", count: ID3Reader.maxTextBytes - 4), "unsynchronised: \(unsynchronised)")
            let bomb = CompressedID3.textTagV23(runCount: 1 << 20, unsynchronised: unsynchronised)
            #expect(throws: ID3TagError.frameInflatesTooFar(frame: "TIT2", declared: (1 << 20) + 1, limit: 64 * 1024)) {
                try bomb.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }
            }
        }
    }

    @Test("Refused before libid3tag: v2.4 compression without a declared size, v2.2 whole-tag compression, frames running past the tag")
    func otherRefusals() throws {
        var noSize = CompressedID3.textTag(runCount: 100)
        noSize[19] = 0x08  // compression without the data length indicator
        #expect(throws: ID3TagError.compressedFrameWithoutSize(frame: "TIT2")) {
            try noSize.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }
        }
        let v22: [UInt8] = Array("ID3".utf8) + [2, 0, 0x40, 0, 0, 0, 10] + [UInt8](repeating: 0x41, count: 10)
        #expect(throws: ID3TagError.compressedTag) { try v22.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) } }
        var overrun = CompressedID3.textTag(runCount: 100)
        overrun[17] = 0x7F  // the frame claims more bytes than the tag holds
        #expect(throws: ID3TagError.malformed) { try overrun.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) } }
        // Tags airtap writes itself (padding, many frames) pass.
        let written = ID3Writer.render(ID3TagContent(text: ID3TextFrames([(id: "TIT2", text: "T"), (id: "TPE1", text: "A")]), comment: "c"),
                                       paddedLength: 4096)
        #expect(try written.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }?.title == "T")
    }

    @Test("A frame that declares less than it inflates to: libid3tag stops at the declared size (no title, no overrun)")
    func declaresTooLittle() throws {
        let tag = CompressedID3.textTag(runCount: 1 << 20, declared: 100)
        let frames = try tag.withUnsafeBytes { try ID3Reader.readTextFrames(in: $0) }
        #expect((frames?.title?.utf8.count ?? 0) <= 100)
    }

    @Test("record: a compressed-tag bomb in the stream is ignored with one short warning; a big compressed title is cut; every file's tag stays small")
    func bombInTheStream() async throws {
        let bomb = CompressedID3.textTag(prefix: "Bomb ", runCount: 16 << 20)
        let big = CompressedID3.textTag(prefix: "Big ", runCount: 60_000)
        let stream = HostileStreamTests.frames(0..<60) + bomb + HostileStreamTests.frames(60..<120) + big + HostileStreamTests.frames(120..<200)
        let body = HostileStreamTests.interleave(stream, metaint: 8000, blocks: [0: HostileStreamTests.titleBlock("A - One")])
        let (folder, result) = try await HostileStreamTests.record(body, extra: ["--log-level", "info"])
        #expect(result.status == 0, "\(result.stderr.prefix(2000))")
        #expect(result.stderr.contains("ignored an ID3 tag in the stream"), "\(result.stderr.prefix(2000))")
        #expect(result.stderr.utf8.count < 64 * 1024, "stderr carries \(result.stderr.utf8.count) bytes")
        let recorded = try HostileStreamTests.recordedAudio(folder)
        #expect(recorded.audio == HostileStreamTests.frames(0..<200))
        #expect(!recorded.files.contains { $0.tag?.title?.hasPrefix("Bomb") ?? false })
        let bigTitle = recorded.files.compactMap { $0.tag?.title }.first { $0.hasPrefix("Big AAA") }
        #expect(bigTitle.map { $0.utf8.count <= ID3Reader.maxTextBytes } == true, "the big title is recorded, cut")
        for path in recorded.paths {
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(path)))
            let tagLength = ID3v2Header(bytes)?.totalLength ?? 0
            #expect(tagLength < 32 * 1024, "\(path) carries a \(tagLength)-byte tag")
        }
    }
}
