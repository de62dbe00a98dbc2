/// The time part of a crontab line, checked the way cron(8) reads it.
///
/// crontab(1) refuses a whole table when one line is wrong, and `schedule --install` writes the
/// user's table, so a mistake in stations.json must be caught here, with the station's name,
/// instead of by crontab. The grammar is the common ground of Vixie cron (Debian's) and cronie:
/// five fields, each a list of `*`, `N`, `N-M`, `*/S` or `N-M/S`; names (`jan`, `mon`) for months
/// and days of the week; or one of the `@daily`-style shortcuts. `N/S` (cronie only) is refused.
struct CronExpression: Sendable, Hashable, CustomStringConvertible {
    /// The expression with its fields separated by single spaces.
    package let text: String

    package init(_ text: String) throws(CronExpressionError) {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        if fields.count == 1, let shortcut = fields.first, shortcut.hasPrefix("@") {
            guard Self.shortcuts.contains(shortcut) else { throw .unknownShortcut(shortcut) }
            self.text = shortcut
            return
        }
        guard fields.count == 5 else { throw .fieldCount(fields.count) }
        for (field, rule) in zip(fields, CronField.all) {
            try rule.check(field)
        }
        self.text = fields.joined(separator: " ")
    }

    package var description: String { text }

    static let shortcuts: Set<String> = ["@reboot", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"]
}

/// Why a cron expression was refused; `description` is one line that names the field.
enum CronExpressionError: Error, Sendable, Hashable, CustomStringConvertible {
    case fieldCount(Int)
    case unknownShortcut(String)
    /// The field's name ("minute"), its text, and what is wrong with it.
    case invalidField(field: String, text: String, reason: String)

    package var description: String {
        switch self {
        case .fieldCount(let count):
            "a cron expression has 5 fields (minute hour day-of-month month day-of-week), not \(count)"
        case .unknownShortcut(let text):
            "unknown cron shortcut '\(text)' (known: \(CronExpression.shortcuts.sorted().joined(separator: " ")))"
        case .invalidField(let field, let text, let reason):
            "\(field) field '\(text)': \(reason)"
        }
    }
}

/// One of the five fields: its range and the names it accepts.
struct CronField: Sendable {
    let name: String
    let range: ClosedRange<Int>
    let names: [String: Int]

    static let all = [
        CronField(name: "minute", range: 0...59, names: [:]),
        CronField(name: "hour", range: 0...23, names: [:]),
        CronField(name: "day-of-month", range: 1...31, names: [:]),
        CronField(name: "month", range: 1...12, names: Self.names(
            ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], from: 1)),
        // 0 and 7 are both Sunday.
        CronField(name: "day-of-week", range: 0...7, names: Self.names(
            ["sun", "mon", "tue", "wed", "thu", "fri", "sat"], from: 0)),
    ]

    private static func names(_ list: [String], from first: Int) -> [String: Int] {
        Dictionary(uniqueKeysWithValues: list.enumerated().map { ($0.element, $0.offset + first) })
    }

    func check(_ text: String) throws(CronExpressionError) {
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard !item.isEmpty else { throw invalid(text, "empty list item") }
            try checkItem(item, of: text)
        }
    }

    private func checkItem(_ item: Substring, of text: String) throws(CronExpressionError) {
        let parts = item.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw invalid(text, "more than one '/' in '\(item)'") }
        let base = parts[0]
        if parts.count == 2 {
            guard let step = Self.digits(parts[1]), step >= 1 else { throw invalid(text, "the step '\(parts[1])' is not a number from 1") }
            guard base == "*" || base.contains("-") else { throw invalid(text, "a step needs a range or '*' before it, as in '*/\(parts[1])'") }
        }
        if base == "*" { return }
        let bounds = base.split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count <= 2 else { throw invalid(text, "'\(base)' is not a number or a range") }
        let low = try value(bounds[0], of: text)
        if bounds.count == 2 {
            let high = try value(bounds[1], of: text)
            guard low <= high else { throw invalid(text, "the range '\(base)' runs backwards") }
        }
    }

    private func value(_ token: Substring, of text: String) throws(CronExpressionError) -> Int {
        if let number = Self.digits(token) {
            guard range.contains(number) else {
                throw invalid(text, "\(number) is outside \(range.lowerBound)-\(range.upperBound)")
            }
            return number
        }
        if let named = names[token.lowercased()] { return named }
        let accepted = names.isEmpty ? "a number" : "a number or a name such as '\(names.min { $0.value < $1.value }?.key ?? "")'"
        throw invalid(text, "'\(token)' is not \(accepted)")
    }

    /// Plain decimal digits only: `Int("+5")` would accept what cron does not.
    private static func digits(_ token: Substring) -> Int? {
        guard !token.isEmpty, token.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(token)
    }

    private func invalid(_ text: String, _ reason: String) -> CronExpressionError {
        .invalidField(field: name, text: text, reason: reason)
    }
}
