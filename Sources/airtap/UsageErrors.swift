import ArgumentParser

/// Usage errors as users read them: one `airtap: ...` line that ends with where to look next,
/// and a suggestion for a mistyped subcommand, instead of ArgumentParser's usage block.
enum UsageErrors {
    /// The subcommand names the root command knows, plus ArgumentParser's built-in `help`.
    static var commandNames: [String] {
        Airtap.configuration.subcommands.map { $0._commandName } + ["help"]
    }

    /// "unknown command 'recrod'; did you mean 'record'?" when the first argument is neither an
    /// option nor a subcommand; nil when the command line starts well.
    static func unknownCommandMessage(arguments: [String]) -> String? {
        guard let first = arguments.first, !first.hasPrefix("-") else { return nil }
        let known = commandNames
        guard !known.contains(first) else { return nil }
        let message = "unknown command '\(first)'"
        if let suggestion = closest(to: first, among: known) {
            return message + "; did you mean '\(suggestion)'? (see 'airtap --help')"
        }
        return message + " (commands: \(known.filter { $0 != "help" }.joined(separator: ", ")); see 'airtap --help')"
    }

    /// ArgumentParser's message for a usage error, as one line with a hint naming the
    /// subcommand's help.
    static func oneLine(_ parserMessage: String, arguments: [String]) -> String {
        let firstLine = parserMessage.split(whereSeparator: \.isNewline).first.map(String.init) ?? "invalid command line"
        var text = firstLine.hasPrefix("Error: ") ? String(firstLine.dropFirst("Error: ".count)) : firstLine
        // "Missing expected argument" -> "missing expected argument", but keep "URL" as it is.
        if let first = text.first, first.isUppercase, text.dropFirst().first?.isLowercase == true {
            text = first.lowercased() + text.dropFirst()
        }
        let command = arguments.first(where: { commandNames.contains($0) && $0 != "help" })
        let help = command.map { "airtap \($0) --help" } ?? "airtap --help"
        return "airtap: \(text) (see '\(help)')"
    }

    /// The known name within edit distance 2 (or a third of the word) of `word`, if one is.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = max(2, word.count / 3)
        let scored = candidates.map { ($0, editDistance(word.lowercased(), $0)) }.filter { $0.1 <= limit }
        if let best = scored.min(by: { $0.1 < $1.1 }) { return best.0 }
        // A prefix of one command only ("rec") is as good as a typo.
        let prefixed = candidates.filter { $0.hasPrefix(word.lowercased()) }
        return prefixed.count == 1 ? prefixed[0] : nil
    }

    /// Damerau-Levenshtein (optimal string alignment): a swapped pair of letters ("recrod")
    /// costs one, as a typist sees it.
    static func editDistance(_ a: String, _ b: String) -> Int {
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
