import ICYWire

/// The values a file-name template can use for one recorded track.
package struct TrackNameFields: Sendable, Hashable {
    package var station: String
    package var artist: String?
    package var title: String
    /// "2026-11-22"
    package var date: String
    /// "22-05-13": no colons, which other systems' file systems reject.
    package var time: String
    /// The running number of the track in this recording, from 1.
    package var seq: Int

    package init(station: String, artist: String?, title: String, date: String, time: String, seq: Int) {
        self.station = station
        self.artist = artist
        self.title = title
        self.date = date
        self.time = time
        self.seq = seq
    }
}

/// A `--template` such as `{station}/{artist} - {title}`: placeholders, literal text, and `/`
/// between the folders inside the output folder. Parsed once; `render` cannot fail.
package struct FileNameTemplate: Sendable, Hashable {
    /// `{station}/{artist} - {title}`, built directly so that it needs no `try`; a test checks
    /// that it equals the parsed text.
    package static let standard = FileNameTemplate(
        text: "{station}/{artist} - {title}",
        components: [[.field(.station)], [.field(.artist), .literal(" - "), .field(.title)]])

    package let text: String
    /// One entry per path component, folders first; never empty, no entry empty.
    private let components: [[Segment]]

    package init(_ text: String) throws(FileNameTemplateError) {
        guard !text.isEmpty else { throw .empty }
        guard !text.hasPrefix("/") else { throw .absolute }
        var components: [[Segment]] = []
        for part in text.split(separator: "/", omittingEmptySubsequences: false) {
            guard !part.isEmpty else { throw .emptyFolder }
            guard part != ".", part != ".." else { throw .dotFolder(String(part)) }
            components.append(try Self.parseComponent(part))
        }
        self.text = text
        self.components = components
    }

    private init(text: String, components: [[Segment]]) {
        self.text = text
        self.components = components
    }

    /// Safe relative path components: folders then the file's base name (no extension).
    ///
    /// Never empty; no component is "." or "..", none contains "/" "\" or control characters,
    /// none starts with "." or "-", each is at most 200 UTF-8 bytes (cut at a character
    /// boundary), NFC. An empty value drops the literal separator next to it, so
    /// `{artist} - {title}` without an artist gives just the title. A component that ends up
    /// empty falls back: the base name to "<station> <date> <time>", a folder to the station
    /// name (and if that is empty too, "station").
    package func render(_ fields: TrackNameFields) -> [String] {
        let values = Values(fields)
        let lastIndex = components.count - 1
        return components.enumerated().map { index, segments in
            let rendered = SafeFileName.component(Self.join(segments, values))
            if let rendered { return rendered }
            return index == lastIndex ? values.baseNameFallback : values.folderFallback
        }
    }

    // MARK: - Parsing

    enum Field: String, CaseIterable, Sendable, Hashable {
        case station, artist, title, date, time, seq
    }

    enum Segment: Sendable, Hashable {
        case literal(String)
        case field(Field)
    }

    private static func parseComponent(_ part: Substring) throws(FileNameTemplateError) -> [Segment] {
        var segments: [Segment] = []
        var literal = ""
        var rest = part[...]
        while let character = rest.first {
            switch character {
            case "{":
                guard let close = rest.firstIndex(of: "}") else { throw .unbalancedBrace("{") }
                let name = rest[rest.index(after: rest.startIndex)..<close]
                guard !name.contains("{") else { throw .unbalancedBrace("{") }
                guard let field = Field(rawValue: String(name)) else { throw .unknownPlaceholder(String(name)) }
                if !literal.isEmpty { segments.append(.literal(literal)) }
                literal = ""
                segments.append(.field(field))
                rest = rest[rest.index(after: close)...]
            case "}":
                throw .unbalancedBrace("}")
            default:
                literal.append(character)
                rest = rest.dropFirst()
            }
        }
        if !literal.isEmpty { segments.append(.literal(literal)) }
        return segments
    }

    // MARK: - Rendering

    /// The field values, cleaned so that a value can never add a folder or a control character.
    private struct Values {
        let station, artist, title, date, time, seq: String

        init(_ fields: TrackNameFields) {
            station = SafeFileName.cleanedValue(fields.station)
            artist = SafeFileName.cleanedValue(fields.artist ?? "")
            title = SafeFileName.cleanedValue(fields.title)
            date = SafeFileName.cleanedValue(fields.date)
            time = SafeFileName.cleanedValue(fields.time)
            seq = String(fields.seq)
        }

        func value(_ field: Field) -> String {
            switch field {
            case .station: station
            case .artist: artist
            case .title: title
            case .date: date
            case .time: time
            case .seq: seq
            }
        }

        var baseNameFallback: String {
            let stamp = [station, date, time].filter { !$0.isEmpty }.joined(separator: " ")
            return SafeFileName.component(stamp) ?? "recording"
        }

        var folderFallback: String { SafeFileName.component(station) ?? "station" }
    }

    /// Concatenates a component, first removing each empty field together with the separator
    /// that joins it to a neighbouring field: the one after it, or at the end the one before.
    /// Literals that only lead or trail the component are kept (they are not separators).
    private static func join(_ segments: [Segment], _ values: Values) -> String {
        var segments = segments
        while let empty = segments.firstIndex(where: { segment in
            if case .field(let field) = segment { values.value(field).isEmpty } else { false }
        }) {
            segments.remove(at: empty)
            if isSeparator(in: segments, at: empty, towards: empty + 1) {
                segments.remove(at: empty)
            } else if isSeparator(in: segments, at: empty - 1, towards: empty - 2) {
                segments.remove(at: empty - 1)
            }
        }
        return segments.map { segment in
            switch segment {
            case .literal(let text): text
            case .field(let field): values.value(field)
            }
        }.joined()
    }

    /// Whether `segments[index]` is a literal with a field at `neighbour`.
    private static func isSeparator(in segments: [Segment], at index: Int, towards neighbour: Int) -> Bool {
        guard segments.indices.contains(index), segments.indices.contains(neighbour),
            case .literal = segments[index], case .field = segments[neighbour]
        else { return false }
        return true
    }
}

/// Why a `--template` was rejected; `description` is one line for the user.
package enum FileNameTemplateError: Error, Sendable, Hashable, CustomStringConvertible {
    case empty
    /// Starts with "/": templates are relative to the output folder.
    case absolute
    case unknownPlaceholder(String)
    /// A "{" without its "}", or a "}" without its "{".
    case unbalancedBrace(Character)
    /// "//" or a trailing "/".
    case emptyFolder
    /// A literal "." or ".." folder.
    case dotFolder(String)

    package var description: String {
        let known = FileNameTemplate.Field.allCases.map { "{\($0.rawValue)}" }.joined(separator: " ")
        switch self {
        case .empty: return "the template is empty"
        case .absolute: return "the template must be relative to the output folder (it starts with '/')"
        case .unknownPlaceholder(let name): return "unknown placeholder {\(name)} in the template (known: \(known))"
        case .unbalancedBrace(let brace): return "unbalanced '\(brace)' in the template"
        case .emptyFolder: return "empty folder name in the template ('//' or a trailing '/')"
        case .dotFolder(let name): return "the template may not use '\(name)' as a folder"
        }
    }
}

/// Turns text from strangers (station names, titles) into one safe path component.
package enum SafeFileName {
    /// `text` as one path component: NFC; "/" and "\" become "-"; control characters and line
    /// separators become spaces; bidirectional overrides are dropped (they make "gpj.exe" look
    /// like "exe.jpg"); runs of white space collapse to one space; leading dots, dashes and
    /// spaces are stripped (hidden files, options to the `--on-track-done` command, "..");
    /// the result is cut to `maxBytes` UTF-8 bytes at a character boundary. Other punctuation
    /// stays: `???` is a fine name on Linux. nil if nothing usable is left.
    package static func component(_ text: String, maxBytes: Int = 200) -> String? {
        guard maxBytes > 0 else { return nil }
        let cleaned = cleanedValue(text)
        let start = cleaned.unicodeScalars.firstIndex { !leadingJunk.contains($0) } ?? cleaned.endIndex
        let stripped = String(cleaned.unicodeScalars[start...])
        let cut = trimmedEnd(prefix(stripped, maxBytes: maxBytes))
        return cut.isEmpty ? nil : cut
    }

    /// `base` with " (n)" appended for the n-th file of the same name (n ≥ 2), cutting `base`
    /// first so that the whole still fits `maxBytes`. `base` should come from `component`.
    package static func numbered(_ base: String, _ number: Int, maxBytes: Int = 200) -> String {
        guard number >= 2 else { return base }
        let suffix = " (\(number))"
        let room = max(0, maxBytes - suffix.utf8.count)
        return trimmedEnd(prefix(base, maxBytes: room)) + suffix
    }

    /// A field value before it is placed into a template: the same mapping as `component`
    /// minus the leading-character rule and the length cap, which apply to whole components
    /// (a title may follow a literal, and the cap must count the whole name).
    /// The text in Unicode Normalization Form C (composed: "é" is one scalar), as Foundation's
    /// `precomposedStringWithCanonicalMapping` makes it, but from the standard library: String
    /// compares and hashes by its NFC form, and `_nfcCodeUnits` (public, underscored) hands
    /// that form out as UTF-8. Foundation's version would link Foundation and ICU (12 MB).
    static func nfc(_ text: String) -> String {
        String(decoding: text._nfcCodeUnits, as: UTF8.self)
    }

    static func cleanedValue(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        var pendingSpace = false
        // ASCII is its own NFC: a name is made at every track, thousands a minute in a fleet.
        let normalized = text.utf8.allSatisfy { $0 < 0x80 } ? text : nfc(text)
        for scalar in normalized.unicodeScalars {
            if isBidiControl(scalar) { continue }
            let mapped: Unicode.Scalar = (scalar == "/" || scalar == "\\") ? "-" : scalar
            if isSpaceLike(mapped) {
                pendingSpace = !result.isEmpty
                continue
            }
            if pendingSpace { result.append(" ") }
            pendingSpace = false
            result.append(mapped)
        }
        return String(result)
    }

    private static let leadingJunk: Set<Unicode.Scalar> = [".", "-", " "]

    /// LRE RLE PDF LRO RLO, LRI RLI FSI PDI.
    private static func isBidiControl(_ scalar: Unicode.Scalar) -> Bool {
        (0x202A...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
    }

    private static func isSpaceLike(_ scalar: Unicode.Scalar) -> Bool {
        // ASCII without the property tables: C0 controls, space and DEL are the only such.
        if scalar.isASCII { return scalar.value <= 0x20 || scalar.value == 0x7F }
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .spaceSeparator: return true
        default: return scalar.properties.isWhitespace
        }
    }

    /// The longest prefix of whole characters within `maxBytes` UTF-8 bytes; when even the first
    /// character is longer (a pile of combining marks), whole scalars instead, so that a long
    /// run of marks still yields something.
    private static func prefix(_ text: String, maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var bytes = 0
        var end = text.startIndex
        for index in text.indices {
            let next = bytes + text[index].utf8.count
            guard next <= maxBytes else { break }
            bytes = next
            end = text.index(after: index)
        }
        if end > text.startIndex { return String(text[..<end]) }
        var scalars = String.UnicodeScalarView()
        bytes = 0
        for scalar in text.unicodeScalars {
            bytes += UTF8.width(scalar)
            guard bytes <= maxBytes else { break }
            scalars.append(scalar)
        }
        return String(scalars)
    }

    private static func trimmedEnd(_ text: String) -> String {
        var text = text
        while text.last == " " { text.removeLast() }
        return text
    }
}
