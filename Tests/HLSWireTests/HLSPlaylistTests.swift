@testable import HLSWire
@testable import ICYWire
import Testing

@Suite struct HLSPlaylistTests {
    let base = "http://127.0.0.1:8000/live/radio/index.m3u8?token=1"

    private func parse(_ text: String, limits: HLSPlaylistLimits = HLSPlaylistLimits()) throws -> HLSPlaylist {
        try HLSPlaylist.parse(Array(text.utf8), baseURL: base, limits: limits)
    }

    private func media(_ text: String) throws -> HLSMediaPlaylist {
        guard case .media(let playlist) = try parse(text) else { throw HLSPlaylistError.empty }
        return playlist
    }

    private func master(_ text: String) throws -> HLSMasterPlaylist {
        guard case .master(let playlist) = try parse(text) else { throw HLSPlaylistError.empty }
        return playlist
    }

    static let masterText = """
        #EXTM3U
        #EXT-X-VERSION:3
        #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.5"
        low/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=320000,AVERAGE-BANDWIDTH=300000,CODECS="mp4a.40.2"
        /abs/high.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.2"
        http://other.example/mid.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720
        video.m3u8

        """

    @Test func masterPlaylistVariantsAndAttributes() throws {
        let playlist = try master(Self.masterText)
        #expect(playlist.variants.count == 4)
        #expect(playlist.variants[0].uri == "http://127.0.0.1:8000/live/radio/low/index.m3u8")
        #expect(playlist.variants[0].codecs == ["mp4a.40.5"])
        #expect(playlist.variants[1].uri == "http://127.0.0.1:8000/abs/high.m3u8")
        #expect(playlist.variants[1].averageBandwidth == 300_000)
        #expect(playlist.variants[2].uri == "http://other.example/mid.m3u8")
        // A quoted CODECS list keeps its comma inside the quotes.
        #expect(playlist.variants[3].codecs == ["avc1.64001f", "mp4a.40.2"])
        #expect(playlist.variants[3].isAudioOnly == false)
    }

    @Test func variantChoice() throws {
        let playlist = try master(Self.masterText)
        // The video variant is ignored while audio-only ones exist.
        #expect(playlist.chooseVariant()?.bandwidth == 320_000)
        #expect(playlist.chooseVariant(maxBitrate: 200_000)?.bandwidth == 128_000)
        #expect(playlist.chooseVariant(maxBitrate: 128_000)?.bandwidth == 128_000)
        // Every variant over the limit: the lowest still plays.
        #expect(playlist.chooseVariant(maxBitrate: 1000)?.bandwidth == 64000)
    }

    @Test func mediaPlaylistTags() throws {
        let playlist = try media("""
            #EXTM3U\r
            #EXT-X-VERSION:6\r
            #EXT-X-TARGETDURATION:10\r
            #EXT-X-MEDIA-SEQUENCE:4711\r
            #EXT-X-DISCONTINUITY-SEQUENCE:3\r
            #EXT-X-PLAYLIST-TYPE:EVENT\r
            #EXT-X-MAP:URI="init.mp4",BYTERANGE="700@0"\r
            #EXT-X-PROGRAM-DATE-TIME:2026-11-26T12:00:00.500Z\r
            #EXTINF:10.0,title="Blinding Lights",artist="The Weeknd",url="song_spot=\\"M\\" MediaBaseId=\\"2176085\\""\r
            seg1.m4s\r
            #EXT-X-DISCONTINUITY\r
            #EXTINF:9.5,Daft Punk - One More Time\r
            seg2.m4s\r
            #EXT-X-KEY:METHOD=AES-128,URI="../keys/k1",IV=0x000102030405060708090a0b0c0d0e0f\r
            #EXTINF:10,\r
            #EXT-X-BYTERANGE:1000@5\r
            seg3.m4s\r
            #EXT-X-KEY:METHOD=NONE\r
            #EXTINF:10,Untitled\r
            #EXT-X-BYTERANGE:500\r
            seg4.m4s\r
            #EXT-X-ENDLIST\r
            """)
        #expect(playlist.targetDuration == 10)
        #expect(playlist.mediaSequence == 4711)
        #expect(playlist.discontinuitySequence == 3)
        #expect(playlist.playlistType == .event)
        #expect(playlist.hasEndList)
        #expect(playlist.segments.map(\.sequence) == [4711, 4712, 4713, 4714])
        #expect(playlist.segments.map(\.duration) == [10, 9.5, 10, 10])
        #expect(playlist.segments.map(\.isDiscontinuity) == [false, true, false, false])
        #expect(playlist.segments[0].uri == "http://127.0.0.1:8000/live/radio/seg1.m4s")
        #expect(playlist.segments[0].title == HLSSegmentTitle(extinfText: #"title="Blinding Lights",artist="The Weeknd""#))
        #expect(playlist.segments[0].title?.artist == "The Weeknd")
        #expect(playlist.segments[0].title?.title == "Blinding Lights")
        #expect(playlist.segments[1].title?.artist == "Daft Punk")
        #expect(playlist.segments[1].title?.title == "One More Time")
        #expect(playlist.segments[2].title == nil)
        #expect(playlist.segments[3].title?.streamTitle == "Untitled")
        #expect(playlist.segments[0].programDateTime == 1_795_694_400.5)
        #expect(playlist.segments[1].programDateTime == nil)
        #expect(playlist.segments.allSatisfy { $0.map == HLSMap(uri: "http://127.0.0.1:8000/live/radio/init.mp4", byteRange: HLSByteRange(length: 700, offset: 0)) })
        #expect(playlist.segments[1].key == nil)
        let key = try #require(playlist.segments[2].key)
        #expect(key.method == .aes128)
        #expect(key.uri == "http://127.0.0.1:8000/live/keys/k1")
        #expect(key.initializationVector(forSequence: 4713) == Array(0...15))
        #expect(playlist.segments[2].byteRange == HLSByteRange(length: 1000, offset: 5))
        // Without @offset a range follows the previous one.
        #expect(playlist.segments[3].byteRange == HLSByteRange(length: 500, offset: 1005))
        #expect(playlist.segments[3].key == nil)
    }

    @Test func ivFromTheMediaSequenceNumber() throws {
        let playlist = try media("""
            #EXTM3U
            #EXT-X-TARGETDURATION:6
            #EXT-X-MEDIA-SEQUENCE:258
            #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example/k"
            #EXTINF:6,
            a.ts
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://x"
            #EXTINF:6,
            b.ts
            """)
        let key = try #require(playlist.segments[0].key)
        #expect(key.iv == nil)
        #expect(key.initializationVector(forSequence: 258) == [UInt8](repeating: 0, count: 14) + [1, 2])
        #expect(playlist.segments[1].key?.method == .unsupported("SAMPLE-AES"))
    }

    @Test func shortIVIsPaddedAndMalformedIVIsAnError() throws {
        let short = try media("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x0102\n#EXTINF:6,\na.ts\n")
        #expect(short.segments[0].key?.iv == [UInt8](repeating: 0, count: 14) + [1, 2])
        #expect(throws: HLSPlaylistError.malformed(line: 3, tag: "#EXT-X-KEY")) {
            try parse("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0xZZ\n#EXTINF:6,\na.ts\n")
        }
    }

    @Test func titleForms() {
        #expect(HLSSegmentTitle(extinfText: "") == nil)
        #expect(HLSSegmentTitle(extinfText: #"title="",artist="""#) == nil)
        let iHeart = HLSSegmentTitle(extinfText: #" title="Say \"Hi\", Now",artist="A, B""#)
        #expect(iHeart?.title == #"Say "Hi", Now"#)
        #expect(iHeart?.artist == "A, B")
        // Attribute-looking text that is not entirely attributes reads as a plain title.
        let plain = HLSSegmentTitle(extinfText: #"Artist - title="x" remix"#)
        #expect(plain?.artist == "Artist")
        #expect(plain?.title == #"title="x" remix"#)
        #expect(HLSSegmentTitle(extinfText: #"artist="Only Artist""#)?.streamTitle == "Only Artist")
    }

    @Test("Unified Streaming's `#EXTINF:6.4, no desc` is a placeholder, not a title; a title that only contains the words is one")
    func placeholderIsNoTitle() throws {
        let playlist = try media("#EXTM3U\n#EXT-X-TARGETDURATION:7\n#EXTINF:6.4, no desc\na.ts\n#EXTINF:6.4,No Desc\nb.ts\n#EXTINF:6.4,no desc - live\nc.ts\n")
        #expect(playlist.segments.map(\.duration) == [6.4, 6.4, 6.4])
        #expect(playlist.segments[0].title == nil)
        #expect(playlist.segments[1].title == nil)
        #expect(playlist.segments[2].title?.streamTitle == "no desc - live")
    }

    @Test func hostilePlaylistsFailWithTypedErrors() {
        #expect(throws: HLSPlaylistError.notM3U8) { try parse("<html><body>404</body></html>") }
        #expect(throws: HLSPlaylistError.notM3U8) { try parse("") }
        #expect(throws: HLSPlaylistError.missingTargetDuration) { try parse("#EXTM3U\n#EXTINF:10,\na.ts\n") }
        #expect(throws: HLSPlaylistError.masterAndMedia) {
            try parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n")
        }
        #expect(throws: HLSPlaylistError.variantWithoutURI(line: 2)) { try parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n") }
        #expect(throws: HLSPlaylistError.malformed(line: 2, tag: "#EXTINF")) { try parse("#EXTM3U\n#EXTINF:abc,\na.ts\n") }
        #expect(throws: HLSPlaylistError.malformed(line: 2, tag: "#EXT-X-TARGETDURATION")) { try parse("#EXTM3U\n#EXT-X-TARGETDURATION:-1\n") }
        #expect(throws: HLSPlaylistError.malformed(line: 2, tag: "#EXT-X-MEDIA-SEQUENCE")) {
            try parse("#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:99999999999999999999999\n")
        }
        #expect(throws: HLSPlaylistError.empty) { try parse("#EXTM3U\n# just a comment\n") }
    }

    /// The tag belongs before the first segment (RFC 8216 4.3.3.2), but one that comes later
    /// still numbers every segment, so sequence numbers stay contiguous.
    @Test func mediaSequenceAfterTheFirstSegmentNumbersThemAll() throws {
        let playlist = try media("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n#EXT-X-MEDIA-SEQUENCE:40\n#EXTINF:2,\nb.ts\n")
        #expect(playlist.segments.map(\.sequence) == [40, 41])
    }

    @Test func sizesAreBoundedBeforeAllocation() {
        let longLine = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2," + String(repeating: "x", count: 10_000_000) + "\na.ts\n"
        #expect(throws: HLSPlaylistError.lineTooLong(line: 3, limit: 8192)) { try parse(longLine) }

        var many = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"
        for index in 0..<100_000 { many += "#EXTINF:2,\n\(index).ts\n" }
        #expect(throws: HLSPlaylistError.tooManyLines(limit: 50_000)) { try parse(many) }
        #expect(throws: HLSPlaylistError.tooManySegments(limit: 10)) {
            try parse(many, limits: HLSPlaylistLimits(maxLines: 1_000_000, maxSegments: 10))
        }
        let blank = "#EXTM3U\n" + String(repeating: "\n", count: 200_000)
        #expect(throws: HLSPlaylistError.tooManyLines(limit: 50_000)) { try parse(blank) }
    }

    @Test func programDateTimeForms() {
        #expect(ProgramDateTime.secondsSince1970("1970-01-01T00:00:00Z") == 0)
        #expect(ProgramDateTime.secondsSince1970("2000-03-01T00:00:00+01:00") == 951_865_200.0)
        #expect(ProgramDateTime.secondsSince1970("2000-03-01T00:00:00.25-0030") == 951_870_600.25)
        #expect(ProgramDateTime.secondsSince1970("2000-13-01T00:00:00Z") == nil)
        #expect(ProgramDateTime.secondsSince1970("yesterday") == nil)
    }

    @Test func readsFFmpegPlaylists() async throws {
        let output = try await FFmpegHLS.output()
        for (name, firstURI) in [("ts.m3u8", "ts0.ts"), ("fm.m3u8", "f0.m4s"), ("mp3.m3u8", "m0.ts")] {
            let text = try output.bytes(name)
            guard case .media(let playlist) = try HLSPlaylist.parse(text, baseURL: "http://127.0.0.1:1/x/\(name)") else {
                Issue.record("\(name) is not a media playlist")
                continue
            }
            #expect(playlist.hasEndList)
            #expect(playlist.playlistType == .vod)
            #expect(playlist.targetDuration == 2)
            #expect(playlist.segments.count == 3)
            #expect(playlist.segments.first?.uri == "http://127.0.0.1:1/x/\(firstURI)")
            #expect(abs(playlist.segments.map(\.duration).reduce(0, +) - 5) < 0.1)
        }
    }

    @Test("Byte ranges past a terabyte (offsets summed from 18-digit lengths) are malformed, never an overflow")
    func hugeByteRanges() {
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n"
        for _ in 0..<12 { text += "#EXTINF:1,\n#EXT-X-BYTERANGE:999999999999999999\nall.ts\n" }
        #expect(throws: HLSPlaylistError.self) { try HLSPlaylist.parse(Array(text.utf8), baseURL: "http://x/live.m3u8") }
        let small = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n#EXT-X-BYTERANGE:1000@0\nall.ts\n#EXTINF:1,\n#EXT-X-BYTERANGE:1000\nall.ts\n"
        guard case .media(let media) = try? HLSPlaylist.parse(Array(small.utf8), baseURL: "http://x/live.m3u8") else {
            Issue.record("a small byte-range playlist did not parse")
            return
        }
        #expect(media.segments.map(\.byteRange) == [HLSByteRange(length: 1000, offset: 0), HLSByteRange(length: 1000, offset: 1000)])
    }
}
