import AirtapSupport

/// airtap's lines in a user's crontab: a block between two marker lines that
/// `schedule --install` replaces as a whole, leaving every other line as it was.
enum CrontabBlock {
    package static let beginMarker = "# BEGIN airtap (managed by 'airtap schedule --install')"
    package static let endMarker = "# END airtap"

    /// `table` with its airtap block replaced by `lines` wrapped in the markers: in the old
    /// block's place, or appended after a blank line when there was none. Empty `lines` remove
    /// the block (which is how `--install` uninstalls when no station has a schedule).
    ///
    /// Lines outside the block are kept byte for byte. A marker without its partner is an error
    /// rather than a guess: guessing wrong would delete the user's own lines.
    package static func merge(_ lines: [String], into table: String) throws(AirtapError) -> String {
        var tableLines = table.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // A table that ends in a newline splits into a last empty element, not a blank line.
        if tableLines.last == "" { tableLines.removeLast() }

        var kept: [String] = []
        var insertionPoint: Int?
        var insideSince: Int?
        for (number, line) in tableLines.enumerated() {
            if isBegin(line) {
                guard insideSince == nil else { throw unbalanced("a second '\(beginMarker)' before '\(endMarker)'", line: number) }
                insideSince = number
                if insertionPoint == nil { insertionPoint = kept.count }
            } else if isEnd(line) {
                guard insideSince != nil else { throw unbalanced("'\(endMarker)' without '\(beginMarker)' before it", line: number) }
                insideSince = nil
            } else if insideSince == nil {
                kept.append(line)
            }
        }
        if let insideSince { throw unbalanced("'\(beginMarker)' without '\(endMarker)' after it", line: insideSince) }

        let block = lines.isEmpty ? [] : [beginMarker] + lines + [endMarker]
        if let insertionPoint {
            kept.insert(contentsOf: block, at: insertionPoint)
        } else if !block.isEmpty {
            if let last = kept.last, !last.allSatisfy(\.isWhitespace) { kept.append("") }
            kept += block
        }
        // cron ignores a last line without a newline, so every line gets one.
        return kept.map { $0 + "\n" }.joined()
    }

    /// The block's lines without the markers; nil when the table has none.
    package static func lines(in table: String) -> [String]? {
        let all = table.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let begin = all.firstIndex(where: isBegin),
              let end = all[begin...].firstIndex(where: isEnd) else { return nil }
        return Array(all[(begin + 1)..<end])
    }

    /// By prefix, so that a later airtap that words the marker differently still finds the block.
    private static func isBegin(_ line: String) -> Bool {
        trimmed(line).hasPrefix("# BEGIN airtap")
    }

    private static func isEnd(_ line: String) -> Bool {
        trimmed(line) == endMarker
    }

    private static func trimmed(_ line: String) -> Substring {
        let text = line[...]
        let start = text.firstIndex { !$0.isWhitespace } ?? text.endIndex
        let end = text.lastIndex { !$0.isWhitespace }.map(text.index(after:)) ?? start
        return start < end ? text[start..<end] : ""
    }

    private static func unbalanced(_ what: String, line: Int) -> AirtapError {
        .configuration("your crontab has \(what) (line \(line + 1)); fix it with 'crontab -e', then run 'airtap schedule --install' again")
    }
}
