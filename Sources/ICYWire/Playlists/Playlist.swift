package enum PlaylistFormat: String, Sendable, Hashable {
    case pls, m3u
}

package enum PlaylistError: Error, Sendable, Hashable {
    /// The stream itself in segments (an HLS media or master playlist), for a transport to
    /// follow, not a list of stream URLs.
    case isSegmentedStream
    case noEntries
}

/// The playlists stations link to instead of the stream itself (.pls, .m3u).
package enum Playlist {
    /// By the URL path's extension (.pls, .m3u, .m3u8), ignoring query and fragment.
    package static func format(forURL url: String) -> PlaylistFormat? {
        let path = URLParts(url).path
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "pls": return .pls
        case "m3u", "m3u8": return .m3u
        default: return nil
        }
    }

    /// The stream URLs, in playlist order. `format` nil sniffs: a `[playlist]` section means
    /// PLS, anything else M3U. PLS entries are `FileN=` sorted by N; M3U entries are the
    /// non-comment lines, relative ones resolved against `baseURL` (the playlist's URL).
    package static func entries(in text: String, format: PlaylistFormat?, baseURL: String?) throws(PlaylistError) -> [String] {
        var body = Substring(text)
        if body.first == "\u{FEFF}" { body = body.dropFirst() }
        // Character splitting treats CR LF, CR and LF alike as newlines.
        let lines = body.split(whereSeparator: \.isNewline).map { trimmed($0) }
        let resolved = format ?? (lines.contains { $0.lowercased() == "[playlist]" } ? .pls : .m3u)
        let entries: [String]
        switch resolved {
        case .pls: entries = plsEntries(lines).map { url in baseURL.map { resolve(url, against: $0) } ?? url }
        case .m3u: entries = try m3uEntries(lines, baseURL: baseURL)
        }
        guard !entries.isEmpty else { throw .noEntries }
        return entries
    }

    private static func plsEntries(_ lines: [String]) -> [String] {
        var numbered: [(number: Int, url: String)] = []
        for line in lines {
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].lowercased()
            guard key.hasPrefix("file"), let number = Int(key.dropFirst(4)) else { continue }
            let url = trimmed(line[line.index(after: equals)...])
            if !url.isEmpty { numbered.append((number, url)) }
        }
        // Stable: equal numbers keep file order.
        return numbered.enumerated()
            .sorted { ($0.element.number, $0.offset) < ($1.element.number, $1.offset) }
            .map(\.element.url)
    }

    private static let hlsTags = ["#EXT-X-TARGETDURATION", "#EXT-X-STREAM-INF", "#EXT-X-MEDIA-SEQUENCE"]

    private static func m3uEntries(_ lines: [String], baseURL: String?) throws(PlaylistError) -> [String] {
        var entries: [String] = []
        for line in lines where !line.isEmpty {
            if line.hasPrefix("#") {
                let upper = line.uppercased()
                if hlsTags.contains(where: { upper.hasPrefix($0) }) { throw .isSegmentedStream }
                continue
            }
            entries.append(baseURL.map { resolve(line, against: $0) } ?? line)
        }
        return entries
    }

    /// RFC 3986 reference resolution, enough for playlist entries: absolute URLs stay,
    /// `//host/x`, `/x`, `x` and `../x` resolve against the base.
    package static func resolve(_ reference: String, against base: String) -> String {
        if URLParts.scheme(of: reference) != nil { return reference }
        let baseParts = URLParts(base)
        guard let scheme = baseParts.scheme else { return reference }
        if reference.hasPrefix("//") { return scheme + ":" + reference }
        let authority = baseParts.authority.map { "//" + $0 } ?? ""
        let referencePath = reference.prefix { $0 != "?" && $0 != "#" }
        let suffix = reference[referencePath.endIndex...]
        let mergedPath: String
        if referencePath.isEmpty {
            mergedPath = baseParts.path
        } else if referencePath.hasPrefix("/") {
            mergedPath = String(referencePath)
        } else {
            let directory = baseParts.path.lastIndex(of: "/").map { baseParts.path[...$0] } ?? "/"
            mergedPath = String(directory) + referencePath
        }
        return scheme + ":" + authority + removingDotSegments(mergedPath) + suffix
    }

    private static func removingDotSegments(_ path: String) -> String {
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if output.count > 1 { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        let joined = output.joined(separator: "/")
        return path.hasPrefix("/") && !joined.hasPrefix("/") ? "/" + joined : joined
    }
}

/// scheme://authority/path?query#fragment, split without validation.
private struct URLParts {
    let scheme: String?
    let authority: String?
    let path: String

    init(_ url: String) {
        var rest = Substring(url)
        scheme = Self.scheme(of: url)
        if let scheme { rest = rest.dropFirst(scheme.count + 1) }
        if rest.hasPrefix("//") {
            rest = rest.dropFirst(2)
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            authority = String(rest[..<authorityEnd])
            rest = rest[authorityEnd...]
        } else {
            authority = nil
        }
        path = String(rest.prefix { $0 != "?" && $0 != "#" })
    }

    static func scheme(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":") else { return nil }
        let candidate = url[..<colon]
        guard let first = candidate.first, first.isASCII, first.isLetter,
              candidate.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return nil }
        return String(candidate)
    }
}
