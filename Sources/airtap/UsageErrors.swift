import AirtapKit
import AirtapSupport
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
        if let suggestion = Suggestion.closest(to: first, among: known) {
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
}
