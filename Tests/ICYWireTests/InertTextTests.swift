import Testing
@testable import ICYWire

@Suite struct InertTextTests {
    @Test func controlCharactersBecomeVisibleEscapes() {
        #expect(InertText.render("a\u{1B}[2Jb") == "a\\e[2Jb")
        // OSC 52: write "Hello" to the clipboard, ended by BEL.
        #expect(InertText.render("\u{1B}]52;c;SGVsbG8=\u{07}") == "\\e]52;c;SGVsbG8=\\x07")
        #expect(InertText.render("one\ntwo\r\tthree") == "one\\ntwo\\r\\tthree")
        #expect(InertText.render("\u{00}\u{7F}\u{9B}31m") == "\\x00\\x7f\\x9b31m")
        #expect(InertText.render("evil\u{202E}txt.exe\u{2028}") == "evil\\u{202e}txt.exe\\u{2028}")
    }

    @Test func printableTextIsUnchanged() {
        for text in ["Café – 日本語 🎵 👨‍👩‍👧", "back\\slash and 'quotes' & <tags>", ""] {
            #expect(InertText.render(text) == text)
        }
    }

    @Test func nothingRawRemains() {
        let every = String(String.UnicodeScalarView((0...0x2100).compactMap(Unicode.Scalar.init)))
        let inert = InertText.render(every)
        #expect(!inert.unicodeScalars.contains { InertText.needsEscape($0) })
    }

    @Test func cutOnACharacterBoundaryWithAMarker() {
        let cut = InertText.render(String(repeating: "€", count: 100), maxUTF8Bytes: 20)
        #expect(cut == String(repeating: "€", count: 5) + "…")
        #expect(cut.utf8.count <= 20)
        #expect(InertText.render("short", maxUTF8Bytes: 20) == "short")
    }
}
