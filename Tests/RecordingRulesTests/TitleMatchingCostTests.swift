@testable import ICYWire
@testable import RecordingRules
import Testing

/// The cost of a keep or skip list, counted in the matcher's own steps (comparisons, automaton
/// moves, bit-set words), never in time: the bounds hold on any machine however loaded.
@Suite("Keep and skip lists: matching cost")
struct TitleMatchingCostTests {
    /// A title as long as a metadata block allows ("StreamTitle='';" takes 15 of its 4080 bytes).
    static let titleLength = 4060

    private static func steps(_ list: TitlePatternList, _ title: String) -> (match: TitlePatternList.Pattern?, steps: Int) {
        var steps = 0
        let match = list.firstMatch(for: title, steps: &steps)
        return (match, steps)
    }

    private static func list(_ lines: [String]) throws -> TitlePatternList {
        try TitlePatternList.parse(Array(lines.joined(separator: "\n").utf8))
    }

    @Test("255 hostile 4 KB patterns against a 4 KB title: a few steps per character of the title and the list")
    func hostileLongPatterns() throws {
        let title = String(repeating: "a", count: Self.titleLength)
        // Each family costs a backtracking matcher the title's length times the pattern's.
        let families = [
            "*" + String(repeating: "a", count: 4000) + "b*",
            String(repeating: "*a", count: 2000) + "*b",
            "*" + String(repeating: String(repeating: "a", count: 63) + "*", count: 63) + "b",
            String(repeating: "a", count: 2000) + "*" + String(repeating: "a", count: 2000) + "b",
            "a*" + String(repeating: "a", count: 1000) + "*" + String(repeating: "a", count: 2999) + "b",
            "*" + String(repeating: "a", count: 100) + "b*a",
        ]
        let lines = (0..<255).map { families[$0 % families.count] }
        let patterns = try Self.list(lines)
        let listLength = lines.reduce(0) { $0 + $1.count }
        let (match, steps) = Self.steps(patterns, title)
        #expect(match == nil)
        #expect(steps <= 4 * (Self.titleLength * lines.count + listLength), "\(steps) steps")
    }

    @Test("a piece with ? costs the title's length over 64 per character of the piece")
    func hostileQuestionMarks() throws {
        // Every run of the pattern occurs, and its places agree with one another until its last
        // character: "a" every third place of the title, "b" where no such place can have one.
        let title = String(repeating: "abb", count: Self.titleLength / 3)
        let piece = String(repeating: "a??", count: 600) + "b"
        let lines = Array(repeating: "*" + piece + "*", count: 255)
        let patterns = try Self.list(lines)
        let listLength = lines.reduce(0) { $0 + $1.count }
        let (match, steps) = Self.steps(patterns, title)
        #expect(match == nil)
        let words = (Self.titleLength + 63) / 64
        #expect(steps <= 4 * (Self.titleLength * lines.count + listLength) + listLength * words, "\(steps) steps")
        // The places were compared, not skipped: every literal of every line cost a step at least.
        #expect(steps >= lines.count * 601)
    }

    @Test("10,000 plain lines cost the title's length once, not once per line")
    func manyPlainLines() throws {
        var generator = SplitMix(seed: 7)
        let letters = Array("abcdefghijklmnopqrstuvwxyz ")
        let title = String((0..<Self.titleLength).map { _ in letters[Int(generator.next() % 27)] })
        let lines = (0..<TitlePatternList.maxPatterns).map { index in
            "artist \(index) " + String((0..<12).map { _ in letters[Int(generator.next() % 26)] })
        }
        let patterns = try Self.list(lines)
        let listLength = lines.reduce(0) { $0 + $1.count }
        let (match, steps) = Self.steps(patterns, title)
        #expect(match == nil)
        #expect(steps <= 4 * (Self.titleLength + listLength), "\(steps) steps")
        let (last, _) = Self.steps(patterns, title + " " + lines[lines.count - 1].uppercased())
        #expect(last?.line == lines.count)
    }

    @Test("the same answers as the backtracking matcher, on every short pattern and title of a small alphabet")
    func sameAsBacktracking() throws {
        var generator = SplitMix(seed: 11)
        let patternCharacters = Array("ab?*")
        let titleCharacters = Array("abA")
        for _ in 0..<20_000 {
            let pattern = String((0..<Int(generator.next() % 7 + 1)).map { _ in patternCharacters[Int(generator.next() % 4)] })
            let title = String((0..<Int(generator.next() % 9)).map { _ in titleCharacters[Int(generator.next() % 3)] })
            let expected = Self.backtrackingMatch(pattern, title)
            #expect(TitlePatternList.Pattern(text: pattern).matches(title) == expected, "\(pattern) against \(title)")
        }
        // Lists: the first matching line is the one reported, whichever way it was found.
        for _ in 0..<2_000 {
            let lines = (0..<Int(generator.next() % 5 + 1)).map { _ in
                String((0..<Int(generator.next() % 5 + 1)).map { _ in patternCharacters[Int(generator.next() % 4)] })
            }
            let title = String((0..<Int(generator.next() % 7)).map { _ in titleCharacters[Int(generator.next() % 3)] })
            let expected = lines.firstIndex { Self.backtrackingMatch($0, title) }.map { $0 + 1 }
            #expect(try Self.list(lines).firstMatch(for: title)?.line == expected, "\(lines) against \(title)")
        }
    }

    /// The documented rules, written the obvious way (exponential in the worst case): the
    /// reference the fast matcher must agree with.
    static func backtrackingMatch(_ pattern: String, _ title: String) -> Bool {
        let pattern = Array(pattern.lowercased())
        let title = Array(title.lowercased())
        guard pattern.contains(where: { $0 == "*" || $0 == "?" }) else {
            return title.indices.contains { title[$0...].starts(with: pattern) } || pattern.isEmpty
        }
        func match(_ p: ArraySlice<Character>, _ t: ArraySlice<Character>) -> Bool {
            guard let first = p.first else { return t.isEmpty }
            switch first {
            case "*": return t.indices.contains { match(p.dropFirst(), t[$0...]) } || match(p.dropFirst(), t[t.endIndex...])
            case "?": return !t.isEmpty && match(p.dropFirst(), t.dropFirst())
            default: return t.first == first && match(p.dropFirst(), t.dropFirst())
            }
        }
        return match(pattern[...], title[...])
    }
}

/// A small seeded generator, so a failure can be replayed.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
