import Testing
@testable import ICYWire

@Suite struct ResponseHeadTests {
    private func head(_ fields: [String], status: String = "HTTP/1.0 200 OK") throws -> ResponseHead {
        try ResponseHead.parse(statusLine: status, headerLines: fields)
    }

    @Test func shoutcastV1() throws {
        let response = try head([
            "icy-notice1: <BR>This stream requires Winamp<BR>\r\n",
            "icy-name:Radio Test\r\n",
            "icy-genre: Jazz  ",
            "icy-url: http://radio.example",
            "icy-description: All jazz",
            "content-type: audio/mpeg",
            "icy-pub: 1",
            "icy-metaint:16000",
            "icy-br: 128,128",
            "\r\n",
        ], status: "ICY 200 OK\r\n")
        #expect(response.protocolName == "ICY")
        #expect(response.statusCode == 200)
        #expect(response.reason == "OK")
        #expect(response.icyName == "Radio Test")
        #expect(response.icyGenre == "Jazz")
        #expect(response.icyURL == "http://radio.example")
        #expect(response.icyDescription == "All jazz")
        #expect(response.icyBitrate == 128)
        #expect(response.isPublic == true)
        #expect(response.metaint == .interval(16000))
        #expect(response.payload == .audio(.mp3))
        #expect(response["ICY-NAME"] == "Radio Test")
        #expect(response.fields.count == 9)
    }

    @Test func httpResponse() throws {
        let response = try head([
            "Server: Icecast 2.4.4",
            "Content-Type: audio/aacp; charset=binary",
            "icy-pub: 0",
            "icy-br: 64",
            "X-Folded: one",
            " two",
        ], status: "HTTP/1.1 200 OK")
        #expect(response.protocolName == "HTTP/1.1")
        #expect(response.server == "Icecast 2.4.4")
        #expect(response.contentType == "audio/aacp")
        #expect(response.payload == .audio(.aac))
        #expect(response.isPublic == false)
        #expect(response.icyBitrate == 64)
        #expect(response.metaint == .absent)
        #expect(response["x-folded"] == "one two")
        #expect(response.icyName == nil)
        let notFound = try head([], status: "HTTP/1.0 404 Not Found")
        #expect(notFound.statusCode == 404)
        #expect(notFound.reason == "Not Found")
        #expect(try head([], status: "HTTP/1.1 204").reason == "")
    }

    @Test func metaintCases() throws {
        #expect(try head(["icy-metaint: 8192"]).metaint == .interval(8192))
        #expect(try head(["icy-metaint: 0"]).metaint == .invalid("0"))
        #expect(try head(["icy-metaint: -1"]).metaint == .invalid("-1"))
        #expect(try head(["icy-metaint: abc"]).metaint == .invalid("abc"))
        #expect(try head(["Icy-MetaInt: 16000", "icy-metaint: 1"]).metaint == .interval(16000))
        #expect(try head([]).metaint == .absent)
    }

    @Test func contentTypesToPayloadKinds() throws {
        let cases: [(String?, PayloadKind)] = [
            ("audio/mpeg", .audio(.mp3)),
            ("Audio/MPEG", .audio(.mp3)),
            ("audio/aac", .audio(.aac)),
            ("audio/aacp", .audio(.aac)),
            ("audio/x-aac", .audio(.aac)),
            ("application/octet-stream", .audio(nil)),
            (nil, .audio(nil)),
            ("audio/x-scpls", .playlist(.pls)),
            ("application/pls+xml", .playlist(.pls)),
            ("audio/x-mpegurl", .playlist(.m3u)),
            ("audio/mpegurl", .playlist(.m3u)),
            ("application/vnd.apple.mpegurl", .playlist(.m3u)),
            ("text/html; charset=utf-8", .other("text/html")),
            ("audio/webm", .unsupported(UnsupportedFormat(mediaType: "audio/webm", name: "Matroska"))),
            ("video/x-matroska", .unsupported(UnsupportedFormat(mediaType: "video/x-matroska", name: "Matroska"))),
            ("audio/flac", .unsupported(UnsupportedFormat(mediaType: "audio/flac", name: "FLAC"))),
            ("audio/ogg", .ogg),
            ("application/ogg; charset=x", .ogg),
            ("video/ogg", .unsupported(UnsupportedFormat(mediaType: "video/ogg", name: "Ogg video"))),
        ]
        for (contentType, kind) in cases {
            let response = try head(contentType.map { ["Content-Type: \($0)"] } ?? [])
            #expect(response.payload == kind, "\(contentType ?? "nil")")
        }
    }

    @Test func malformedStatusLines() {
        for line in ["", "garbage", "HTTP/1.1", "HTTP/1.1 OK", "HTTP/1.1 20 OK", "SIP/2.0 200 OK", "ICY 2000 OK"] {
            #expect(throws: ResponseHeadError.malformedStatusLine(line)) {
                try ResponseHead.parse(statusLine: line, headerLines: [])
            }
        }
    }
}

@Suite struct PlaylistTests {
    @Test func formatFromURL() {
        #expect(Playlist.format(forURL: "http://x/listen.pls") == .pls)
        #expect(Playlist.format(forURL: "http://x/a/listen.M3U?sid=1") == .m3u)
        #expect(Playlist.format(forURL: "https://x/live.m3u8#t") == .m3u)
        #expect(Playlist.format(forURL: "http://x/stream.mp3") == nil)
        #expect(Playlist.format(forURL: "http://radio.pls/") == nil)
        #expect(Playlist.format(forURL: "http://x/stream?format=.pls") == nil)
    }

    @Test func pls() throws {
        let text = "\u{FEFF}[playlist]\r\nNumberOfEntries=3\r\nFile2=http://b/\r\nTitle1=One\r\nFile1=http://a/\r\nfile10=http://c/\r\nVersion=2\r\n"
        #expect(try Playlist.entries(in: text, format: .pls, baseURL: nil) == ["http://a/", "http://b/", "http://c/"])
        #expect(try Playlist.entries(in: text, format: nil, baseURL: nil) == ["http://a/", "http://b/", "http://c/"])
        // Relative entries resolve against the playlist's URL, as in an .m3u.
        #expect(try Playlist.entries(in: "[playlist]\nFile1=/stream\nFile2=http://b/\n", format: .pls, baseURL: "http://host:8000/listen.pls")
            == ["http://host:8000/stream", "http://b/"])
    }

    @Test func m3u() throws {
        let text = "#EXTM3U\r\n#EXTINF:-1,Radio\r\nhttp://a:8000/stream\r\n\r\n  http://b/stream  \r\n"
        #expect(try Playlist.entries(in: text, format: .m3u, baseURL: nil) == ["http://a:8000/stream", "http://b/stream"])
        #expect(try Playlist.entries(in: text, format: nil, baseURL: "http://x/") == ["http://a:8000/stream", "http://b/stream"])
    }

    @Test func relativeM3UEntries() throws {
        let base = "http://host:8000/lists/radio.m3u?x=1"
        let text = "stream.mp3\n/root.mp3\n../up.aac\n//other/x\n./here?q=1\n"
        #expect(try Playlist.entries(in: text, format: .m3u, baseURL: base) == [
            "http://host:8000/lists/stream.mp3",
            "http://host:8000/root.mp3",
            "http://host:8000/up.aac",
            "http://other/x",
            "http://host:8000/lists/here?q=1",
        ])
        #expect(try Playlist.entries(in: "a.mp3", format: .m3u, baseURL: "http://host") == ["http://host/a.mp3"])
        #expect(try Playlist.entries(in: "a.mp3", format: .m3u, baseURL: nil) == ["a.mp3"])
    }

    @Test func hlsIsToldApart() {
        for tag in ["#EXT-X-TARGETDURATION:10", "#EXT-X-STREAM-INF:BANDWIDTH=128000", "#EXT-X-MEDIA-SEQUENCE:1"] {
            let text = "#EXTM3U\n\(tag)\nsegment1.aac\n"
            #expect(throws: PlaylistError.isSegmentedStream) {
                try Playlist.entries(in: text, format: nil, baseURL: "http://x/live.m3u8")
            }
        }
    }

    @Test func emptyPlaylistsAreErrors() {
        for (text, format) in [("", nil), ("#EXTM3U\n\n", PlaylistFormat.m3u), ("[playlist]\nNumberOfEntries=0\n", nil), ("\u{FEFF}", .pls)] {
            #expect(throws: PlaylistError.noEntries) {
                try Playlist.entries(in: text, format: format, baseURL: nil)
            }
        }
    }
}
