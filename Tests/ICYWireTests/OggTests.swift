import Foundation
@testable import ICYWire
import SplitFixtures
import TestStation
import Testing

/// Chained Ogg streams built in the test from synthetic header packets: each link a BOS page
/// with its identification header, its comment (and setup) pages, then audio pages.
enum OggFixtures {
    static func vorbisIdentification(rate: Int = 44100, channels: UInt8 = 2, nominal: Int = 128_000) -> [UInt8] {
        var packet: [UInt8] = [0x01] + Array("vorbis".utf8)
        appendLE(0, bytes: 4, to: &packet)
        packet.append(channels)
        appendLE(UInt64(rate), bytes: 4, to: &packet)
        appendLE(0, bytes: 4, to: &packet)
        appendLE(UInt64(nominal), bytes: 4, to: &packet)
        appendLE(0, bytes: 4, to: &packet)
        packet += [0xB8, 0x01]
        return packet
    }

    static func opusIdentification(channels: UInt8 = 2) -> [UInt8] {
        var packet = Array("OpusHead".utf8) + [1, channels, 0x38, 0x01]
        appendLE(44100, bytes: 4, to: &packet)
        packet += [0, 0, 0]
        return packet
    }

    /// One link: header pages and `audioPages` audio pages of `audioPacketLength`-byte packets.
    static func link(serial: UInt32, codec: OggCodec, title: String, artist: String = "Artist",
                     audioPages: Int = 3, audioPacketLength: Int = 300, commentPadding: Int = 0) -> [[UInt8]] {
        let comments = VorbisComments(vendor: "test", fields: [
            .init(key: "TITLE", value: title), .init(key: "artist", value: artist),
            .init(key: "PADDING", value: String(repeating: "x", count: commentPadding)),
        ])
        let identification = codec == .opus ? opusIdentification() : vorbisIdentification()
        var pages = OggPaginator.pages(for: [identification], serialNumber: serial, firstSequenceNumber: 0,
                                       firstFlags: .beginningOfStream, granulePosition: 0)
        var rest = [comments.packet(for: codec)]
        if codec == .vorbis { rest.append([0x05] + Array("vorbis".utf8) + Array(repeating: 0x42, count: 700)) }
        pages += OggPaginator.pages(for: rest, serialNumber: serial, firstSequenceNumber: 1, firstFlags: [],
                                    granulePosition: 0)
        for index in 0..<audioPages {
            let packets = (0..<4).map { packet in [UInt8](repeating: UInt8(truncatingIfNeeded: index * 4 + packet), count: audioPacketLength) }
            pages += OggPaginator.pages(for: packets, serialNumber: serial, firstSequenceNumber: UInt32(pages.count),
                                        firstFlags: index == audioPages - 1 ? .endOfStream : [],
                                        granulePosition: Int64((index + 1) * 4096))
        }
        return pages
    }

    struct Read: Equatable {
        var titles: [String?] = []
        var audioPages = 0
        var headerPages = 0
        var skipped = 0
        var pageBytes = 0
    }

    static func read(_ chunks: [[UInt8]]) -> Read {
        var framer = OggFramer()
        var links = OggLinkReader()
        var result = Read()
        func handle(_ event: OggFramerEvent) {
            switch event {
            case .skipped(_, let count): result.skipped += count
            case .page(let page, _):
                result.pageBytes += page.bytes.count
                switch links.read(page) {
                case .linkStarted(let link):
                    result.headerPages += 1
                    result.titles.append(link.comments.streamTitle)
                case .header: result.headerPages += 1
                case .audio: result.audioPages += 1
                default: break
                }
            }
        }
        for chunk in chunks { framer.push(chunk, handle) }
        framer.finish(handle)
        return result
    }
}

@Suite struct OggTests {
    @Test("Pages read back with their fields, and a built page's CRC is what the parser checks")
    func pageRoundTrip() throws {
        let bytes = OggPage.build(flags: [.beginningOfStream], granulePosition: 1234, serialNumber: 0xDEAD_BEEF,
                                  sequenceNumber: 7, lacing: [255, 10], body: [UInt8](repeating: 9, count: 265))
        guard case .page(let page) = OggPage.parse(bytes[...]) else {
            Issue.record("not parsed")
            return
        }
        #expect(page.granulePosition == 1234)
        #expect(page.serialNumber == 0xDEAD_BEEF)
        #expect(page.sequenceNumber == 7)
        #expect(page.isBeginningOfStream)
        #expect(page.packetPieces.map(\.bytes.count) == [265])
        var corrupt = bytes
        corrupt[40] ^= 1
        guard case .invalid = OggPage.parse(corrupt[...]) else {
            Issue.record("a flipped body bit must fail the CRC")
            return
        }
        guard case .needMore(let count) = OggPage.parse(bytes.prefix(30)) else {
            Issue.record("a short page needs more")
            return
        }
        #expect(count == 27 + 2 + 265)
    }

    @Test("A packet longer than a page is continued over pages and reassembled as the link's comment header")
    func longCommentSpansPages() {
        let pages = OggFixtures.link(serial: 5, codec: .vorbis, title: "Lang", commentPadding: 70_000)
        let read = OggFixtures.read([pages.joined().map { $0 }])
        #expect(read.titles == ["Artist - Lang"])
        #expect(read.headerPages >= 3)
        #expect(read.audioPages == 3)
    }

    @Test("Chained links: each BOS starts a link whose title comes from its comments (UTF-8), the same however the bytes are split")
    func chainedLinksSplitInvariant() {
        var stream: [UInt8] = [1, 2, 3, 0x4F, 0x67]  // joined mid-page: garbage first
        stream += OggFixtures.link(serial: 1, codec: .vorbis, title: "Première").joined()
        stream += OggFixtures.link(serial: 2, codec: .vorbis, title: "Zweite – Ü").joined()
        stream += [0x4F, 0x67, 0x67, 0x53, 0, 0, 9, 9]  // a false capture pattern
        stream += OggFixtures.link(serial: 3, codec: .opus, title: "Третья").joined()
        let whole = OggFixtures.read([stream])
        #expect(whole.titles == ["Artist - Première", "Artist - Zweite – Ü", "Artist - Третья"])
        #expect(whole.audioPages == 9)
        #expect(whole.skipped == 13)
        #expect(whole.skipped + whole.pageBytes == stream.count, "every byte is a page byte or skipped")
        #expect(OggFixtures.read(stream.map { [$0] }) == whole)
        var random = SplitMix64(seed: 14)
        for _ in 0..<20 {
            var chunks: [[UInt8]] = []
            var rest = stream[...]
            while !rest.isEmpty {
                let count = Int.random(in: 1...3000, using: &random)
                chunks.append(Array(rest.prefix(count)))
                rest = rest.dropFirst(count)
            }
            #expect(OggFixtures.read(chunks) == whole)
        }
    }

    @Test("A corrupted page is skipped and the next page resyncs")
    func resyncAfterCorruptPage() {
        var pages = OggFixtures.link(serial: 1, codec: .vorbis, title: "A", audioPages: 4)
        pages[4][60] ^= 0xFF  // the second audio page
        let read = OggFixtures.read([pages.joined().map { $0 }])
        #expect(read.titles == ["Artist - A"])
        #expect(read.audioPages == 3)
        #expect(read.skipped == pages[4].count)
    }

    @Test("The framer holds back at most one page while it waits")
    func bufferBound() {
        var framer = OggFramer()
        let junk = [UInt8](repeating: 0x4F, count: 200_000)
        framer.push(junk) { _ in }
        #expect(framer.bufferedByteCount <= 3)
        framer.push(Array("OggS".utf8) + [0, 0] + [UInt8](repeating: 0, count: 20) + [0, 0, 0, 0, 255]) { _ in }
        #expect(framer.bufferedByteCount <= OggPage.maxLength)
    }

    @Test("Theora, FLAC and Speex links are named, not read")
    func unsupportedCodecs() {
        for (signature, codec) in [([0x80] + Array("theora".utf8), OggCodec.theora), ([0x7F] + Array("FLAC".utf8), .flac),
                                   (Array("Speex   ".utf8), .speex)] {
            let page = OggPage.build(flags: .beginningOfStream, granulePosition: 0, serialNumber: 1, sequenceNumber: 0,
                                     lacing: [UInt8(signature.count + 20)], body: signature + [UInt8](repeating: 0, count: 20))
            guard case .page(let parsed) = OggPage.parse(page[...]) else { Issue.record("not parsed"); continue }
            var reader = OggLinkReader()
            guard case .unsupported(let found) = reader.read(parsed) else { Issue.record("\(codec) not refused"); continue }
            #expect(found == codec)
        }
    }

    @Test("Headers over the bound are malformed, not buffered")
    func headerBound() {
        let pages = OggFixtures.link(serial: 1, codec: .vorbis, title: "Big", commentPadding: 200_000)
        var reader = OggLinkReader(maxHeaderBytes: 100_000)
        var sawMalformed = false
        for bytes in pages {
            guard case .page(let page) = OggPage.parse(bytes[...]) else { continue }
            if case .malformed = reader.read(page) { sawMalformed = true }
        }
        #expect(sawMalformed)
        #expect(reader.linkCount == 0)
    }

    @Test("Hostile comment headers: lengths past the end are refused, a huge count is bounded")
    func hostileComments() {
        var packet = VorbisComments.vorbisSignature
        appendLE(1000, bytes: 4, to: &packet)  // vendor length past the end
        packet += Array("short".utf8)
        #expect(VorbisComments.parse(packet: packet[...], codec: .vorbis) == nil)

        var many = VorbisComments.opusSignature
        appendLE(0, bytes: 4, to: &many)
        appendLE(UInt64(UInt32.max), bytes: 4, to: &many)
        for _ in 0..<3 {
            appendLE(7, bytes: 4, to: &many)
            many += Array("TITLE=x".utf8)
        }
        #expect(VorbisComments.parse(packet: many[...], codec: .opus) == nil, "the count promises more fields than there are")

        let comments = VorbisComments(vendor: "v", fields: [.init(key: "title", value: "Ä=b")])
        #expect(VorbisComments.parse(packet: comments.packet(for: .opus)[...], codec: .opus) == comments)
        #expect(VorbisComments.parse(packet: comments.packet(for: .vorbis)[...], codec: .vorbis)?.title == "Ä=b")
    }

    @Test("Identification headers give rate, channels and nominal bitrate; Opus counts at 48 kHz")
    func identification() {
        let vorbis = OggAudioInfo(identificationPacket: OggFixtures.vorbisIdentification(rate: 22050, channels: 1)[...])
        #expect(vorbis?.sampleRate == 22050)
        #expect(vorbis?.channels == 1)
        #expect(vorbis?.nominalBitrate == 128_000)
        let opus = OggAudioInfo(identificationPacket: OggFixtures.opusIdentification()[...])
        #expect(opus?.sampleRate == 48000)
        #expect(opus?.preSkip == 312)
        #expect(OggAudioInfo(identificationPacket: OggFixtures.vorbisIdentification().prefix(20)) == nil)
    }

    @Test("A page counts for at most ten seconds at its link's own rate: a granule jump past that is a lie and counts as nothing")
    func pageSecondsBound() {
        func samples(rate: Int, granules: [Int64]) -> [Int] {
            let serial: UInt32 = 3
            var pages = OggPaginator.pages(for: [OggFixtures.vorbisIdentification(rate: rate)], serialNumber: serial,
                                           firstSequenceNumber: 0, firstFlags: .beginningOfStream, granulePosition: 0)
            let comments = VorbisComments(vendor: "test", fields: [.init(key: "TITLE", value: "Slow")])
            pages += OggPaginator.pages(for: [comments.packet(for: .vorbis), [0x05] + Array("vorbis".utf8) + [1, 2, 3]],
                                        serialNumber: serial, firstSequenceNumber: 1, firstFlags: [], granulePosition: 0)
            for granule in granules {
                pages += OggPaginator.pages(for: [[UInt8](repeating: 7, count: 50)], serialNumber: serial,
                                            firstSequenceNumber: UInt32(pages.count), firstFlags: [], granulePosition: granule)
            }
            var packetizer = OggPacketizer()
            var counted: [Int] = []
            packetizer.push(Array(pages.joined())) { event in
                if case .packet(let packet) = event, case .oggPage(let header) = packet.header, header.kind == .audio {
                    counted.append(packet.sampleCount)
                }
            }
            return counted
        }
        // 9 s, then 12 s at 8 kHz: the second is more than a page can hold.
        #expect(samples(rate: 8000, granules: [72_000, 168_000]) == [72_000, 0])
        // A link claiming 1 Hz cannot make a page count for days.
        #expect(samples(rate: 1, granules: [5, 400_000]) == [5, 0])
    }
}

@Suite struct OggFromFFmpegTests {
    /// A file ffmpeg encodes from a sine tone with this title and artist.
    static func encode(codec: String, title: String, seconds: Int = 1) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ogg-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let output = folder.appendingPathComponent(codec == "libopus" ? "a.opus" : "a.ogg")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-nostdin", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=\(seconds)",
                             "-c:a", codec, "-metadata", "title=\(title)", "-metadata", "artist=Ffmpeg", output.path]
        try ChildProcesses.spawn(process)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return Array(try Data(contentsOf: output))
    }

    @Test("A chain of real Vorbis and Opus files (ffmpeg-encoded): every page passes its CRC, one link per file, titles from the comments")
    func realChain() throws {
        let chain = try Self.encode(codec: "libvorbis", title: "Eins") + Self.encode(codec: "libopus", title: "Zwei ✓")
            + Self.encode(codec: "libvorbis", title: "Drei")
        let read = OggFixtures.read([chain])
        #expect(read.skipped == 0)
        #expect(read.pageBytes == chain.count)
        #expect(read.titles == ["Ffmpeg - Eins", "Ffmpeg - Zwei ✓", "Ffmpeg - Drei"])
        #expect(read.audioPages > 3)
    }
}

@Suite struct OggCommentRewriterTests {
    @Test("The comment header is rewritten with the added fields, pages renumbered without gaps, CRCs valid")
    func rewriteRenumbers() {
        // A 70 kB comment spans two pages; without it, one page: every later page moves down by one.
        let original = OggFixtures.link(serial: 9, codec: .vorbis, title: "Eins", commentPadding: 70_000)
        var rewriter = OggCommentRewriter(fields: [.init(key: "ALBUM", value: "Radio Ü"), .init(key: "PADDING", value: "")])
        var output: [UInt8] = []
        var held = 0
        for page in original {
            switch rewriter.rewrite(page[...]) {
            case .unchanged: output += page
            case .held: held += 1
            case .replaced(let bytes): output += bytes
            }
        }
        #expect(held >= 1)
        var framer = OggFramer()
        var reader = OggLinkReader()
        var sequences: [UInt32] = []
        var comments: VorbisComments?
        framer.push(output) { event in
            guard case .page(let page, _) = event else { Issue.record("bytes skipped: a page is broken"); return }
            sequences.append(page.sequenceNumber)
            if case .linkStarted(let link) = reader.read(page) { comments = link.comments }
        }
        #expect(sequences == Array(0..<UInt32(sequences.count)))
        #expect(sequences.count < original.count)
        #expect(comments?.title == "Eins")
        #expect(comments?["ALBUM"] == "Radio Ü")
        #expect(comments?["PADDING"] == "")
    }
}
