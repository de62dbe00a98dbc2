import SplitFixtures
import Testing
import Foundation  // precomposedStringWithCanonicalMapping
@testable import ICYWire
@testable import RecordingRules

/// Equality by UTF-8 bytes: Swift's `==` on strings is canonical equivalence, so it would call
/// NFD and NFC text equal and hide exactly what the NFC tests are about.
private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

private func fields(
    station: String = "Radio X", artist: String? = "Artist", title: String = "Title", seq: Int = 7
) -> TrackNameFields {
    TrackNameFields(station: station, artist: artist, title: title, date: "2026-11-22", time: "22-05-13", seq: seq)
}

/// Every promise `render` makes about each component.
private func expectSafe(_ components: [String], _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(!components.isEmpty, comment, sourceLocation: sourceLocation)
    for component in components {
        #expect(!component.isEmpty, comment, sourceLocation: sourceLocation)
        #expect(component != "." && component != "..", comment, sourceLocation: sourceLocation)
        #expect(!component.contains("/") && !component.contains("\\"), comment, sourceLocation: sourceLocation)
        #expect(!component.hasPrefix(".") && !component.hasPrefix("-"), comment, sourceLocation: sourceLocation)
        #expect(!component.hasPrefix(" ") && !component.hasSuffix(" "), comment, sourceLocation: sourceLocation)
        #expect(component.utf8.count <= 200, comment, sourceLocation: sourceLocation)
        #expect(!component.unicodeScalars.contains { $0.properties.generalCategory == .control },
                comment, sourceLocation: sourceLocation)
        #expect(bytes(component) == bytes(component.precomposedStringWithCanonicalMapping),
                comment, sourceLocation: sourceLocation)
    }
}

@Suite struct FileNameTemplateTests {
    @Test func standardLayout() throws {
        #expect(FileNameTemplate.standard == (try FileNameTemplate("{station}/{artist} - {title}")))
        #expect(FileNameTemplate.standard.render(fields()) == ["Radio X", "Artist - Title"])
        // A title without an artist part uses the title alone.
        #expect(FileNameTemplate.standard.render(fields(artist: nil)) == ["Radio X", "Title"])
        #expect(FileNameTemplate.standard.render(fields(artist: "  ")) == ["Radio X", "Title"])
        // Without a title, the artist alone (the separator before the empty field goes).
        #expect(FileNameTemplate.standard.render(fields(title: "")) == ["Radio X", "Artist"])
    }

    @Test func hostileTitlesStayInside() {
        let cases: [(String, String)] = [
            ("../../x", "x"),
            ("/etc/passwd", "etc-passwd"),
            ("..", "Radio X 2026-11-22 22-05-13"),
            ("../..", "Radio X 2026-11-22 22-05-13"),
            (".hidden", "hidden"),
            ("-rf", "rf"),
            ("-- -rf /", "rf -"),
            ("...And Justice for All", "And Justice for All"),
            ("AC\\DC", "AC-DC"),
            ("a\u{0}b\nc\td\u{7F}\r\n", "a b c d"),
            ("line\u{2028}separator", "line separator"),
            ("  lots   of\u{A0} space  ", "lots of space"),
            ("evil\u{202E}3pm.exe", "evil3pm.exe"),
            ("'...'", "'...'"),
            ("???", "???"),
            ("...", "Radio X 2026-11-22 22-05-13"),
            ("\u{0}\u{1}\n", "Radio X 2026-11-22 22-05-13"),
            ("", "Radio X 2026-11-22 22-05-13"),
        ]
        for (title, expected) in cases {
            let components = FileNameTemplate.standard.render(fields(artist: nil, title: title))
            #expect(components == ["Radio X", expected], "\(title.debugDescription)")
            expectSafe(components, "\(title.debugDescription)")
        }
        // The same through the artist, and through the station (a folder).
        #expect(FileNameTemplate.standard.render(fields(artist: "../..", title: "x")) == ["Radio X", "x"])
        #expect(FileNameTemplate.standard.render(fields(station: "../../etc")) == ["etc", "Artist - Title"])
        #expect(FileNameTemplate.standard.render(fields(station: "AC/DC Radio")) == ["AC-DC Radio", "Artist - Title"])
    }

    @Test func emptyFoldersFallBackToTheStation() throws {
        let template = try FileNameTemplate("{artist}/{title}")
        #expect(template.render(fields(artist: nil)) == ["Radio X", "Title"])
        #expect(template.render(fields(station: "..", artist: nil)) == ["station", "Title"])
        #expect(template.render(fields(station: "", artist: nil, title: "")) == ["station", "2026-11-22 22-05-13"])
    }

    @Test func longTitlesAreCutAtCharacterBoundaries() {
        let titles = [
            String(repeating: "a", count: 4000),
            String(repeating: "é", count: 2000),
            "a" + String(repeating: "€", count: 1333),  // 3-byte characters, off by one
            String(repeating: "👨‍👩‍👧", count: 200),  // 18-byte grapheme clusters
        ]
        for title in titles {
            let components = FileNameTemplate.standard.render(fields(artist: nil, title: title))
            expectSafe(components)
            let name = components[1]
            #expect(name.utf8.count > 200 - 18)
            #expect(title.hasPrefix(name))
            #expect(title.utf8.starts(with: name.utf8))
        }
        let family = FileNameTemplate.standard.render(fields(artist: nil, title: String(repeating: "👨‍👩‍👧", count: 200)))[1]
        #expect(family.utf8.count == 11 * 18)
        #expect(family.count == 11)

        // One "character" longer than the limit (a pile of combining marks) is cut by scalars.
        let zalgo = "a" + String(repeating: "\u{301}", count: 300)
        let cut = FileNameTemplate.standard.render(fields(artist: nil, title: zalgo))[1]
        #expect(cut.utf8.count == 200)  // NFC "á" + 99 two-byte marks
        #expect(zalgo.precomposedStringWithCanonicalMapping.unicodeScalars.starts(with: cut.unicodeScalars))
    }

    @Test func theCapCountsTheWholeName() {
        let components = FileNameTemplate.standard.render(
            fields(artist: String(repeating: "b", count: 150), title: String(repeating: "c", count: 150)))
        #expect(bytes(components[1]) == bytes(String(repeating: "b", count: 150) + " - " + String(repeating: "c", count: 47)))
    }

    @Test func normalizesToNFCAndKeepsNonASCII() {
        let decomposed = "Beyonce\u{301} - Cafe\u{301}"
        let name = FileNameTemplate.standard.render(fields(artist: nil, title: decomposed))[1]
        #expect(bytes(name) == bytes("Beyonc\u{E9} - Caf\u{E9}"))
        #expect(FileNameTemplate.standard.render(fields(artist: "Сплин", title: "Романс")) == ["Radio X", "Сплин - Романс"])
        #expect(FileNameTemplate.standard.render(fields(station: "坂本", artist: nil, title: "戦場のメリークリスマス 🎄"))
                == ["坂本", "戦場のメリークリスマス 🎄"])
    }

    @Test func placeholdersAndFolders() throws {
        let dated = try FileNameTemplate("{station}/{date}/{seq} {artist} - {title} {time}")
        #expect(dated.render(fields()) == ["Radio X", "2026-11-22", "7 Artist - Title 22-05-13"])
        #expect(dated.render(fields(artist: nil)) == ["Radio X", "2026-11-22", "7 Title 22-05-13"])
        let numbered = try FileNameTemplate("[{seq}] {title} - {artist}")
        #expect(numbered.render(fields(seq: 12)) == ["[12] Title - Artist"])
        #expect(numbered.render(fields(artist: nil, seq: 12)) == ["[12] Title"])
        #expect(try FileNameTemplate("{seq}. {artist} - {title}").render(fields(title: "")) == ["7. Artist"])
        #expect(try FileNameTemplate("fixed name").render(fields()) == ["fixed name"])
        #expect(try FileNameTemplate("{artist}{title}").render(fields(artist: nil)) == ["Title"])
        // Literal text in the template is made safe too.
        #expect(try FileNameTemplate("a\\b/{title}").render(fields()) == ["a-b", "Title"])
    }

    @Test func rejectsBadTemplates() {
        let cases: [(String, FileNameTemplateError)] = [
            ("", .empty),
            ("/srv/{title}", .absolute),
            ("{album}", .unknownPlaceholder("album")),
            ("{}", .unknownPlaceholder("")),
            ("{Title}", .unknownPlaceholder("Title")),
            ("{title", .unbalancedBrace("{")),
            ("title}", .unbalancedBrace("}")),
            ("{{title}}", .unbalancedBrace("{")),
            ("{station}//{title}", .emptyFolder),
            ("{station}/", .emptyFolder),
            ("../{title}", .dotFolder("..")),
            ("{station}/./{title}", .dotFolder(".")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try FileNameTemplate(text) }
            let description = expected.description
            #expect(!description.isEmpty && !description.contains("\n"))
        }
        #expect(FileNameTemplateError.unknownPlaceholder("album").description
                == "unknown placeholder {album} in the template (known: {station} {artist} {title} {date} {time} {seq})")
    }

    @Test func randomHostileTitlesAlwaysRenderSafely() throws {
        let alphabet: [Unicode.Scalar] = [
            "/", "\\", ".", "-", " ", "\u{0}", "\n", "\t", "\u{7F}", "\u{85}", "\u{2028}", "\u{202E}",
            "a", "Z", "é", "e", "\u{301}", "€", "😀", "\u{200D}", "'", "\"", "?", "*", ":", "{", "}",
        ]
        var random = SplitMix64(seed: 0xA17_7A9)
        for _ in 0..<500 {
            let length = Int.random(in: 0...120, using: &random)
            var text = String.UnicodeScalarView()
            for _ in 0..<length { text.append(alphabet.randomElement(using: &random) ?? "a") }
            let title = String(text)
            for template in [FileNameTemplate.standard, try FileNameTemplate("{artist}/{title}/{seq}")] {
                expectSafe(template.render(fields(station: title, artist: title, title: title)), "\(title.debugDescription)")
            }
        }
    }
}

@Suite struct SafeFileNameTests {
    @Test func component() {
        #expect(SafeFileName.component("Song") == "Song")
        #expect(SafeFileName.component(".. - Song") == "Song")
        #expect(SafeFileName.component("..") == nil)
        #expect(SafeFileName.component(" \n ") == nil)
        #expect(SafeFileName.component("Song", maxBytes: 0) == nil)
        #expect(SafeFileName.component("Songs  ", maxBytes: 5) == "Songs")
        #expect(SafeFileName.component("Song s", maxBytes: 5) == "Song")  // no trailing space after a cut
        #expect(SafeFileName.component("éé", maxBytes: 3) == "é")
    }

    @Test func numbered() {
        #expect(SafeFileName.numbered("Song", 1) == "Song")
        #expect(SafeFileName.numbered("Song", 2) == "Song (2)")
        let long = String(repeating: "é", count: 100)  // 200 bytes
        let second = SafeFileName.numbered(long, 12)
        #expect(second.utf8.count == 199)  // 97 characters (194 bytes) + " (12)"
        #expect(second.hasSuffix("é (12)"))
    }
}

@Suite struct CueSheetTests {
    @Test func indexTimes() {
        #expect(CueSheet.indexTime(samples: 0, sampleRate: 44100) == "00:00:00")
        #expect(CueSheet.indexTime(samples: 44100, sampleRate: 44100) == "00:01:00")
        // 100 MP3 frames: 2.612 s = 2 s + 45.9 CD frames, rounded down.
        #expect(CueSheet.indexTime(samples: 1152 * 100, sampleRate: 44100) == "00:02:45")
        #expect(CueSheet.indexTime(samples: 587, sampleRate: 44100) == "00:00:00")  // 588 samples per CD frame
        #expect(CueSheet.indexTime(samples: 588, sampleRate: 44100) == "00:00:01")
        #expect(CueSheet.indexTime(samples: 48000 * 61 + 640 * 74, sampleRate: 48000) == "01:01:74")
        #expect(CueSheet.indexTime(samples: 22050 * 3599, sampleRate: 22050) == "59:59:00")
        #expect(CueSheet.indexTime(samples: 44100 * 60 * 123, sampleRate: 44100) == "123:00:00")
        // Nonsense in, no trap out.
        #expect(CueSheet.indexTime(samples: -5, sampleRate: 44100) == "00:00:00")
        #expect(CueSheet.indexTime(samples: 100, sampleRate: 0) == "00:00:00")
        #expect(CueSheet.indexTime(samples: Int.max, sampleRate: Int.max) == "00:01:00")
        #expect(CueSheet.indexTime(samples: Int.max - 1, sampleRate: Int.max) == "00:00:74")
    }

    @Test func rendersGolden() {
        let sheet = CueSheet(
            audioFileName: "night.mp3", performer: "Radio X", title: "Radio X", sampleRate: 44100,
            tracks: [
                .init(performer: "Sigur Rós", title: "Hoppípolla", startSample: 0),
                .init(performer: nil, title: "Station ID", startSample: 1152 * 100),
                .init(performer: "Ween", title: "12\" Mix; \"Push th' Little Daisies\"\nFILE \"x\"", startSample: 44100 * 65),
            ])
        #expect(sheet.render() == """
            PERFORMER "Radio X"
            TITLE "Radio X"
            FILE "night.mp3" MP3
              TRACK 01 AUDIO
                PERFORMER "Sigur Rós"
                TITLE "Hoppípolla"
                INDEX 01 00:00:00
              TRACK 02 AUDIO
                TITLE "Station ID"
                INDEX 01 00:02:45
              TRACK 03 AUDIO
                PERFORMER "Ween"
                TITLE "12” Mix; ”Push th' Little Daisies” FILE ”x”"
                INDEX 01 01:05:00

            """)
    }

    @Test func stationlessAndLongSheets() {
        let tracks = (0..<100).map { CueSheet.Track(performer: nil, title: "t\($0)", startSample: $0 * 44100) }
        let text = CueSheet(audioFileName: "a.mp3", performer: nil, title: nil, sampleRate: 44100, tracks: tracks).render()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.first == "FILE \"a.mp3\" MP3")
        #expect(lines.last == "")
        #expect(!text.contains("\r"))
        #expect(text.contains("  TRACK 100 AUDIO\n    TITLE \"t99\"\n    INDEX 01 01:39:00\n"))
    }
}
