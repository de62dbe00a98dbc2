/// "did you mean ...?" for a mistyped command or stations.json key.
package enum Suggestion {
    /// The candidate within edit distance 2 (or a third of the word) of `word`, or the only
    /// candidate `word` is a prefix of; nil when none is that close.
    package static func closest(to word: String, among candidates: [String]) -> String? {
        let lowered = word.lowercased()
        let limit = max(2, word.count / 3)
        let scored = candidates.map { ($0, editDistance(lowered, $0.lowercased())) }.filter { $0.1 <= limit }
        if let best = scored.min(by: { $0.1 < $1.1 }) { return best.0 }
        let prefixed = candidates.filter { $0.lowercased().hasPrefix(lowered) }
        return prefixed.count == 1 ? prefixed[0] : nil
    }

    /// Damerau-Levenshtein (optimal string alignment): a swapped pair of letters ("recrod")
    /// costs one, as a typist sees it.
    package static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    best = min(best, table[i - 2][j - 2] + 1)
                }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
