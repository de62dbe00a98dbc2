import ICYWire

/// A keep or skip list (`record --keep-only FILE`, `--skip FILE`): one pattern per line, matched
/// against a track's whole "Artist - Title" as received (after charset decoding).
///
/// - Blank lines and lines whose first non-blank character is `#` are ignored; spaces and tabs
///   around a pattern are not part of it.
/// - Case-insensitive by Unicode's lowercase mapping (`*björk*` matches "BJÖRK"), and by
///   characters, so a composed "ö" matches a decomposed one.
/// - A pattern with `*` (any run of characters, none included) or `?` (exactly one character)
///   must match the whole title; a pattern with neither matches when it occurs anywhere in it.
///   Every other character, `[` and `\` included, stands for itself.
package struct TitlePatternList: Sendable, Hashable {
    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.patterns == rhs.patterns }
    package func hash(into hasher: inout Hasher) { hasher.combine(patterns) }

    package struct Pattern: Sendable, Hashable {
        /// The pattern as written (trimmed), for the log line that says why a track was not kept.
        package let text: String
        /// Its line in the file, counted from 1.
        package let line: Int
        /// Whether it must match the whole title (it has a wildcard) or any part of it.
        package let isWholeMatch: Bool
    }

    package enum ParseError: Error, Equatable, CustomStringConvertible {
        /// Not UTF-8 at this line: a list is text the user wrote, and a guessed charset would
        /// make patterns that silently never match.
        case notUTF8(line: Int)
        /// A line longer than `maxLineBytes`.
        case lineTooLong(line: Int)
        /// More than `maxPatterns` patterns.
        case tooManyPatterns

        package var description: String {
            switch self {
            case .notUTF8(let line): "line \(line) is not UTF-8 text"
            case .lineTooLong(let line): "line \(line) is longer than \(TitlePatternList.maxLineBytes) bytes"
            case .tooManyPatterns: "more than \(TitlePatternList.maxPatterns) patterns"
            }
        }
    }

    /// A title is at most a metadata block (4080 bytes); a longer pattern could never match.
    package static let maxLineBytes = 4096
    /// Every pattern is tried on every finished track: bounded, though far above any real list.
    package static let maxPatterns = 10_000

    package let patterns: [Pattern]
    private let matcher: TitleMatcher

    package var isEmpty: Bool { patterns.isEmpty }

    package init(patterns: [Pattern]) {
        self.patterns = patterns
        matcher = TitleMatcher(patterns: patterns)
    }

    /// Parses a list file's bytes. A UTF-8 byte order mark at the start is ignored; lines end at
    /// LF, and a CR before it is dropped.
    package static func parse(_ bytes: some BidirectionalCollection<UInt8>) throws(ParseError) -> TitlePatternList {
        var patterns: [Pattern] = []
        var lineNumber = 0
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        while !rest.isEmpty || lineNumber == 0 {
            lineNumber += 1
            let end = rest.firstIndex(of: UInt8(ascii: "\n")) ?? rest.endIndex
            var line = rest[..<end]
            rest = end == rest.endIndex ? rest[end...] : rest[rest.index(after: end)...]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard line.count <= maxLineBytes else { throw .lineTooLong(line: lineNumber) }
            guard let text = String(validating: line, as: UTF8.self) else { throw .notUTF8(line: lineNumber) }
            let trimmed = text.trimmingBlanks()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard patterns.count < maxPatterns else { throw .tooManyPatterns }
            patterns.append(Pattern(text: trimmed, line: lineNumber))
        }
        return TitlePatternList(patterns: patterns)
    }

    /// The first pattern that matches `title`, if any: in time linear in the title and the
    /// list (`TitleMatcher`), so no list the bounds allow holds a recording up.
    package func firstMatch(for title: String) -> Pattern? {
        var steps = 0
        return firstMatch(for: title, steps: &steps)
    }

    /// `firstMatch(for:)`, adding the work it did to `steps` (for tests that bound it).
    package func firstMatch(for title: String, steps: inout Int) -> Pattern? {
        matcher.firstMatch(for: title, steps: &steps).map { patterns[$0] }
    }
}

extension TitlePatternList.Pattern {
    package init(text: String, line: Int = 1) {
        self.text = text
        self.line = line
        isWholeMatch = text.lowercased().contains { $0 == "*" || $0 == "?" }
    }

    /// Whether the pattern matches `title`.
    package func matches(_ title: String) -> Bool {
        TitlePatternList(patterns: [self]).firstMatch(for: title) != nil
    }
}

extension String {
    /// Without the spaces and tabs around it.
    fileprivate func trimmingBlanks() -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(self[first...last])
    }
}
