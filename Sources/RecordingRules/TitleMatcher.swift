import ICYWire

/// A list's patterns compiled for matching in time linear in the title and the list.
///
/// Characters become numbers once, when the list is read (`alphabet`), so a comparison is one
/// integer compare rather than a Unicode canonical-equivalence test. A pattern is split on `*`
/// into pieces of literals and `?`; the first piece must match at the title's start, the last at
/// its end, and each one between is found leftmost after the one before it. Taking the leftmost
/// place is never wrong (it leaves the most title for the pieces after it), so nothing is ever
/// retried. A piece without `?` is found by Knuth-Morris-Pratt, in the title's length plus its
/// own; one with `?` by AND-ing the title's position sets, 64 places per machine word.
/// One Aho-Corasick pass over the title first says which runs of literals occur at all
/// (`PieceAutomaton`): a pattern one of whose runs does not occur is out without a look.
///
/// The list is the user's, the title a stranger's: a title costs its length once, plus its
/// length again for each pattern all of whose runs occur in it (in order or not). Real lists
/// leave a handful of those; 10,000 lines built so that every one does cost about 0.1 s of CPU
/// per 4 KB title (release build), against 0.4 s for plain lines before this matcher.
struct TitleMatcher: Sendable {
    /// `?` in a piece.
    static let anyOne: Int32 = -2
    /// A title character no pattern names: only `?` and `*` match it.
    static let unnamed: Int32 = -1

    private let alphabet: [Character: Int32]
    private let compiled: [CompiledPattern]
    private let automaton: PieceAutomaton

    init(patterns: [TitlePatternList.Pattern]) {
        var alphabet: [Character: Int32] = [:]
        var automaton = PieceAutomaton()
        func number(_ character: Character) -> Int32 {
            if let known = alphabet[character] { return known }
            let new = Int32(alphabet.count)
            alphabet[character] = new
            return new
        }
        compiled = patterns.map { pattern in
            let symbols: [Int32] = pattern.text.lowercased().map { character in
                switch character {
                case "*": CompiledPattern.anyRun
                case "?": TitleMatcher.anyOne
                default: number(character)
                }
            }
            return CompiledPattern(symbols: symbols, isWholeMatch: pattern.isWholeMatch, automaton: &automaton)
        }
        automaton.finish()
        self.alphabet = alphabet
        self.automaton = automaton
    }

    /// The index of the first pattern that matches `title`; `steps` grows by the work done
    /// (comparisons, automaton moves, bit-set words), which tests bound.
    func firstMatch(for title: String, steps: inout Int) -> Int? {
        guard !compiled.isEmpty else { return nil }
        let symbols = title.lowercased().map { alphabet[$0] ?? Self.unnamed }
        steps += symbols.count
        let occurring = automaton.occurring(in: symbols, steps: &steps)
        var positions: TitlePositions?
        for (index, pattern) in compiled.enumerated() {
            steps += 1 + pattern.requiredPieces.count
            guard pattern.requiredPieces.allSatisfy(occurring.contains) else { continue }
            if pattern.isPlainSubstring { return index }
            if pattern.matches(symbols, positions: &positions, steps: &steps) { return index }
        }
        return nil
    }
}

/// One pattern: its pieces between `*`s, and the literal piece that must occur for it to match.
private struct CompiledPattern: Sendable {
    /// `*` while splitting; never inside a piece.
    static let anyRun: Int32 = -3

    /// A pattern with neither `*` nor `?` is the pieces "", itself, "" (it matches anywhere).
    let pieces: [TitlePiece]
    /// The characters every match needs: the pieces' lengths together.
    let minimumLength: Int
    /// The automaton nodes of its runs of literals: a title that lacks one cannot match.
    let requiredPieces: [Int32]
    /// No wildcard at all: the required piece occurring is the match.
    let isPlainSubstring: Bool

    init(symbols: [Int32], isWholeMatch: Bool, automaton: inout PieceAutomaton) {
        let split = symbols.split(separator: Self.anyRun, omittingEmptySubsequences: false)
        let pieces = isWholeMatch ? split.map { TitlePiece(Array($0)) } : [TitlePiece([]), TitlePiece(symbols), TitlePiece([])]
        self.pieces = pieces
        minimumLength = pieces.reduce(0) { $0 + $1.count }
        isPlainSubstring = !isWholeMatch
        requiredPieces = symbols.split(whereSeparator: { $0 < 0 }).map { automaton.insert($0) }
    }

    func matches(_ title: [Int32], positions: inout TitlePositions?, steps: inout Int) -> Bool {
        let count = title.count
        guard count >= minimumLength else { return false }
        guard pieces.count > 1 else { return count == minimumLength && pieces[0].matches(title, at: 0, steps: &steps) }
        let first = pieces[0]
        let last = pieces[pieces.count - 1]
        let end = count - last.count
        guard first.matches(title, at: 0, steps: &steps), last.matches(title, at: end, steps: &steps) else { return false }
        var start = first.count
        for piece in pieces.dropFirst().dropLast() where piece.count > 0 {
            let found: Int?
            if piece.hasAnyOne {
                if positions == nil { positions = TitlePositions(title, steps: &steps) }
                found = positions?.firstOccurrence(of: piece, from: start, before: end, steps: &steps)
            } else {
                found = piece.firstOccurrence(in: title, from: start, before: end, steps: &steps)
            }
            guard let found else { return false }
            start = found + piece.count
        }
        return true
    }
}

/// A run of literals and `?` between two `*`s.
struct TitlePiece: Sendable {
    let symbols: [Int32]
    let hasAnyOne: Bool
    /// Knuth-Morris-Pratt's table: the longest proper border of each prefix (pieces without `?`).
    private let borders: [Int]

    var count: Int { symbols.count }

    init(_ symbols: [Int32]) {
        self.symbols = symbols
        hasAnyOne = symbols.contains(TitleMatcher.anyOne)
        borders = hasAnyOne ? [] : Self.borders(of: symbols)
    }

    private static func borders(of symbols: [Int32]) -> [Int] {
        var borders = Array(repeating: 0, count: symbols.count)
        var length = 0
        for index in symbols.indices.dropFirst() {
            while length > 0, symbols[index] != symbols[length] { length = borders[length - 1] }
            if symbols[index] == symbols[length] { length += 1 }
            borders[index] = length
        }
        return borders
    }

    /// Whether the piece matches `title` exactly at `start`.
    func matches(_ title: [Int32], at start: Int, steps: inout Int) -> Bool {
        guard start >= 0, start + symbols.count <= title.count else { return false }
        for (offset, symbol) in symbols.enumerated() {
            steps += 1
            if symbol != TitleMatcher.anyOne, symbol != title[start + offset] { return false }
        }
        return true
    }

    /// Where the piece first occurs wholly inside `title[start..<end]` (Knuth-Morris-Pratt: each
    /// title character is read once, and the fallbacks never outnumber the characters read).
    func firstOccurrence(in title: [Int32], from start: Int, before end: Int, steps: inout Int) -> Int? {
        var matched = 0
        var index = start
        while index < end {
            steps += 1
            while matched > 0, symbols[matched] != title[index] {
                steps += 1
                matched = borders[matched - 1]
            }
            if symbols[matched] == title[index] { matched += 1 }
            if matched == symbols.count { return index + 1 - matched }
            index += 1
        }
        return nil
    }
}

/// For each character a title holds, the set of places it is at, as bits: a piece with `?`
/// matches at place p when every literal of it at offset k has p + k in its character's set.
struct TitlePositions {
    private let words: Int
    /// Each character's places, and how many there are.
    private let places: [Int32: (bits: [UInt64], count: Int)]

    init(_ title: [Int32], steps: inout Int) {
        let words = (title.count + 63) / 64
        var places: [Int32: (bits: [UInt64], count: Int)] = [:]
        for (index, symbol) in title.enumerated() where symbol >= 0 {
            steps += 1
            places[symbol, default: (Array(repeating: 0, count: words), 0)].bits[index >> 6] |= 1 << UInt64(index & 63)
            places[symbol]?.count += 1
        }
        steps += places.count * words
        self.words = words
        self.places = places
    }

    /// Where `piece` first matches wholly inside the title's `start..<end`. The candidate places
    /// shrink to the words that still hold one, so a piece that fails early costs little.
    func firstOccurrence(of piece: TitlePiece, from start: Int, before end: Int, steps: inout Int) -> Int? {
        let last = end - piece.count
        guard last >= start else { return nil }
        let firstWord = start >> 6
        var candidates = Array(repeating: UInt64.max, count: (last >> 6) - firstWord + 1)
        candidates[0] &= UInt64.max << UInt64(start & 63)
        candidates[candidates.count - 1] &= UInt64.max >> UInt64(63 - (last & 63))
        // The rarest characters first: a piece the title cannot hold is usually out after one.
        var literals: [(offset: Int, bits: [UInt64], count: Int)] = []
        for (offset, symbol) in piece.symbols.enumerated() where symbol != TitleMatcher.anyOne {
            steps += 1
            guard let place = places[symbol] else { return nil }
            literals.append((offset, place.bits, place.count))
        }
        literals.sort { $0.count < $1.count }
        var live = candidates.indices
        for literal in literals {
            steps += live.count
            live = intersect(&candidates, live, firstWord: firstWord, with: literal.bits, shiftedDownBy: literal.offset)
            if live.isEmpty { return nil }
        }
        return (firstWord + live.lowerBound) << 6 + candidates[live.lowerBound].trailingZeroBitCount
    }

    /// `candidates &= bits >> offset` over the live words; the words that still hold a place.
    private func intersect(_ candidates: inout [UInt64], _ live: Range<Int>, firstWord: Int, with bits: [UInt64],
                           shiftedDownBy offset: Int) -> Range<Int> {
        let wordShift = offset >> 6
        let bitShift = UInt64(offset & 63)
        let words = words
        return candidates.withUnsafeMutableBufferPointer { candidates in
            bits.withUnsafeBufferPointer { bits in
                var low = live.upperBound
                var high = live.lowerBound
                for index in live {
                    let source = firstWord + index + wordShift
                    let lowPart = source < words ? bits[source] >> bitShift : 0
                    let highPart = bitShift != 0 && source + 1 < words ? bits[source + 1] << (64 - bitShift) : 0
                    candidates[index] &= lowPart | highPart
                    if candidates[index] != 0 {
                        low = min(low, index)
                        high = index + 1
                    }
                }
                return low < high ? low..<high : live.lowerBound..<live.lowerBound
            }
        }
    }
}
