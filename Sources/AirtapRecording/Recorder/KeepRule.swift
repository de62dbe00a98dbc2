import AirtapStations
import AirtapSupport
import FoundationEssentials
import ICYWire
import RecordingRules

/// A keep or skip list as loaded: its patterns and the path it came from (for the log line).
package struct TitleList: Sendable, Hashable {
    package let path: String
    package let patterns: TitlePatternList

    package init(path: String, patterns: TitlePatternList) {
        self.path = path
        self.patterns = patterns
    }

    /// The largest list read: far more than `TitlePatternList.maxPatterns` lines of real titles.
    package static let maxFileBytes = 1 << 20

    /// Reads and parses the list at `path`. `describe` names the list in the error, as the user
    /// gave it (`--skip FILE`, `station 'x': skip`); the error is `.usage` or `.configuration`
    /// as `asUsage` says (exit code 1 either way).
    package static func load(_ path: String, describe name: String, asUsage: Bool) throws(AirtapError) -> TitleList {
        func failure(_ reason: String) -> AirtapError {
            let message = "\(name): \(path): \(reason)"
            return asUsage ? .usage(message) : .configuration(message)
        }
        let data: Data
        do {
            data = try BoundedFileRead.contents(of: path, limit: maxFileBytes, regularFileOnly: true)
        } catch {
            switch error {
            case .missing: throw failure("no such file")
            case .tooLarge: throw failure("larger than \(BoundedFileRead.describe(maxFileBytes))")
            case .unreadable(let reason): throw failure("cannot read it: \(reason)")
            }
        }
        do {
            return TitleList(path: path, patterns: try TitlePatternList.parse(data))
        } catch {
            throw failure("\(error)")
        }
    }
}

/// Which finished tracks stay under `--out` (`--keep-only`, `--skip`): decided by the title the
/// track ends with, before anything else happens to the file (its tags, the hooks).
package struct KeepRule: Sendable, Hashable {
    /// Only titles that match one of its patterns are kept.
    package var keepOnly: TitleList?
    /// Titles that match one of its patterns are not kept.
    package var skip: TitleList?

    package init(keepOnly: TitleList? = nil, skip: TitleList? = nil) {
        self.keepOnly = keepOnly
        self.skip = skip
    }

    package var keepsEverything: Bool { keepOnly == nil && skip == nil }

    package enum Decision: Sendable, Hashable {
        case keep
        /// Not kept, and why (one line for the log).
        case discard(reason: String)

        package var isKept: Bool { self == .keep }
    }

    /// The decision for a track whose title is `title` ("Artist - Title" as received; nil when
    /// the station sent none). A track without a title matches no pattern.
    package func decide(title: String?) -> Decision {
        if let skip, let title, let pattern = skip.patterns.firstMatch(for: title) {
            return .discard(reason: "matches \"\(pattern.text)\" (line \(pattern.line) of skip list \(skip.path))")
        }
        if let keepOnly {
            guard let title else { return .discard(reason: "no title, and keep list \(keepOnly.path) keeps titles only") }
            guard keepOnly.patterns.firstMatch(for: title) != nil else {
                return .discard(reason: "matches nothing in keep list \(keepOnly.path)")
            }
        }
        return .keep
    }
}

extension Station {
    /// The station's own lists (stations.json `keep_only`, `skip`), read now; `overriding` (the
    /// command line's) take the place of each the command line gives.
    package func keepRule(overriding commandLine: KeepRule) throws(AirtapError) -> KeepRule {
        var rule = commandLine
        if rule.keepOnly == nil, let path = keepOnly {
            rule.keepOnly = try TitleList.load(resolvedListPath(path), describe: "station '\(id)': keep_only", asUsage: false)
        }
        if rule.skip == nil, let path = skip {
            rule.skip = try TitleList.load(resolvedListPath(path), describe: "station '\(id)': skip", asUsage: false)
        }
        return rule
    }
}
