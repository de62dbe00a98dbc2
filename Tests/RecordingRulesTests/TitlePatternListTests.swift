@testable import ICYWire
@testable import RecordingRules
import Testing

@Suite("Keep and skip lists: parsing and matching")
struct TitlePatternListTests {
    private func list(_ text: String) throws -> TitlePatternList {
        try TitlePatternList.parse(Array(text.utf8))
    }

    private func matches(_ pattern: String, _ title: String) -> Bool {
        TitlePatternList.Pattern(text: pattern).matches(title)
    }

    @Test("comments, blank lines, CRLF, a byte order mark and the blanks around a pattern are not patterns")
    func parsing() throws {
        let parsed = try TitlePatternList.parse([0xEF, 0xBB, 0xBF] + Array("# ads\r\n\r\n  Jingle \t\r\n   # indented comment\nBjörk - *\n\n".utf8))
        #expect(parsed.patterns.map(\.text) == ["Jingle", "Björk - *"])
        #expect(parsed.patterns.map(\.line) == [3, 5])
        #expect(try list("").isEmpty)
        #expect(try list("\n\n# only comments\n").isEmpty)
        #expect(try list("last line without newline").patterns.map(\.text) == ["last line without newline"])
    }

    @Test("bytes that are not UTF-8 are an error naming the line, never a guessed charset")
    func notUTF8() {
        // "Bj\xF6rk" in Latin-1.
        let latin1: [UInt8] = Array("ok\n".utf8) + [0x42, 0x6A, 0xF6, 0x72, 0x6B, 0x0A]
        #expect(throws: TitlePatternList.ParseError.notUTF8(line: 2)) { try TitlePatternList.parse(latin1) }
    }

    @Test("a line longer than any title, or more patterns than the bound, is refused")
    func bounds() throws {
        let long = String(repeating: "a", count: TitlePatternList.maxLineBytes + 1)
        #expect(throws: TitlePatternList.ParseError.lineTooLong(line: 2)) { try list("x\n" + long) }
        #expect(try list(String(repeating: "a", count: TitlePatternList.maxLineBytes)).patterns.count == 1)
        let many = String(repeating: "p\n", count: TitlePatternList.maxPatterns)
        #expect(try list(many).patterns.count == TitlePatternList.maxPatterns)
        #expect(throws: TitlePatternList.ParseError.tooManyPatterns) { try list(many + "one more\n") }
    }

    @Test("without wildcards a pattern matches anywhere in the title")
    func substring() {
        #expect(matches("jingle", "Radio X Jingle 3"))
        #expect(matches("Radio X Jingle 3", "Radio X Jingle 3"))
        #expect(!matches("jingles", "Radio X Jingle 3"))
        #expect(!matches("Radio X Jingle 3 ", "Radio X Jingle 3"))
    }

    @Test("with * or ? a pattern must match the whole title")
    func wholeMatch() {
        #expect(matches("Björk - *", "Björk - Hyperballad"))
        #expect(!matches("Björk - *", "The Sugarcubes & Björk - Birthday"))
        #expect(matches("*Björk*", "The Sugarcubes & Björk - Birthday"))
        #expect(matches("* - Hyperballad", "Björk - Hyperballad"))
        #expect(!matches("* - Hyperballad", "Björk - Hyperballad (live)"))
        #expect(matches("*", ""))
        #expect(matches("*", "anything"))
        #expect(matches("A?BA - *", "ABBA - Waterloo"))
        #expect(!matches("A?BA - *", "ABA - Waterloo"))
        #expect(!matches("A?BA - *", "ABBBA - Waterloo"))
        #expect(matches("???", "abc"))
        #expect(!matches("???", "abcd"))
        #expect(!matches("???", "ab"))
        #expect(matches("a*b*c", "a-b-b-c"))
        #expect(!matches("a*b*c", "a-b-b-c-"))
        #expect(matches("**x**", "x"))
    }

    @Test("case-insensitive beyond ASCII, and by characters (a decomposed ö is an ö)")
    func caseAndCharacters() {
        #expect(matches("*björk*", "BJÖRK - Army of Me"))
        #expect(matches("ÉDITH PIAF", "Édith Piaf - Non, je ne regrette rien"))
        #expect(matches("σ", "ΣΑΣ"))
        #expect(matches("*bjo\u{308}rk*", "Bj\u{F6}rk - Jóga"))
        #expect(matches("*bj\u{F6}rk*", "BJO\u{308}RK - Jóga"))
        // "?" is one character, not one scalar or byte.
        #expect(matches("bj?rk", "Bjo\u{308}rk"))
        #expect(matches("?", "🇸🇪"))
    }

    @Test("every other character is literal: brackets, backslashes, dots, plus")
    func literalCharacters() {
        #expect(matches("[live]", "Artist - Song [Live]"))
        #expect(!matches("[live]", "Artist - Song (live)"))
        #expect(matches("*[a-z]*", "x [A-Z] y"))
        #expect(!matches("*[a-z]*", "x b y"))
        #expect(matches("a\\*", "a\\ and more"))
        #expect(!matches("a.c", "abc"))
        #expect(matches("C++", "Learn C++ Radio"))
    }

    @Test("the first matching pattern is the one reported")
    func firstMatch() throws {
        let parsed = try list("# news\nnews\n*jingle*\nNEWS at *\n")
        #expect(parsed.firstMatch(for: "Radio Jingle")?.text == "*jingle*")
        #expect(parsed.firstMatch(for: "News at Six")?.line == 2)
        #expect(parsed.firstMatch(for: "Björk - Jóga") == nil)
    }

    @Test("a title built to make a backtracking matcher explode costs only its length times the pattern's")
    func pathologicalTitle() {
        let title = String(repeating: "a", count: 4000)
        let pattern = String(repeating: "*a", count: 40) + "b"
        #expect(!matches(pattern, title))
    }
}
