/// The status line and header fields of a stream server's response, with the ICY fields read.
///
/// SHOUTcast v1 answers `ICY 200 OK`; Icecast and SHOUTcast v2 answer HTTP. Both carry
/// `icy-*` fields; `icy-metaint` decides whether the body interleaves metadata.
package struct ResponseHead: Sendable, Hashable {
    package struct Field: Sendable, Hashable {
        package let name: String
        package let value: String

        package init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// "HTTP/1.0", "HTTP/1.1" or "ICY".
    package let protocolName: String
    package let statusCode: Int
    package let reason: String
    /// In arrival order, names as sent, values trimmed.
    package let fields: [Field]

    package init(protocolName: String, statusCode: Int, reason: String, fields: [Field]) {
        self.protocolName = protocolName
        self.statusCode = statusCode
        self.reason = reason
        self.fields = fields
    }

    /// `headerLines` are "Name: value" lines, CR/LF optional; lines without a colon (and an
    /// empty final line) are ignored, and a line starting with whitespace continues the
    /// previous field (obsolete folding).
    package static func parse(statusLine: String, headerLines: [String]) throws(ResponseHeadError) -> ResponseHead {
        let line = trimmed(Substring(statusLine))
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2 else { throw .malformedStatusLine(statusLine) }
        let protocolName = String(parts[0])
        guard protocolName == "ICY" || protocolName.hasPrefix("HTTP/") else {
            throw .malformedStatusLine(statusLine)
        }
        let code = parts[1]
        guard code.utf8.count == 3, code.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let statusCode = Int(code) else {
            throw .malformedStatusLine(statusLine)
        }
        let reason = parts.count > 2 ? trimmed(parts[2]) : ""

        var fields: [Field] = []
        for rawLine in headerLines {
            let isContinuation = rawLine.first == " " || rawLine.first == "\t"
            let text = trimmed(Substring(rawLine))
            if text.isEmpty { continue }
            if isContinuation, let last = fields.last {
                fields[fields.count - 1] = Field(name: last.name, value: last.value + " " + text)
                continue
            }
            guard let colon = text.firstIndex(of: ":") else { continue }
            let name = trimmed(text[..<colon])
            guard !name.isEmpty else { continue }
            fields.append(Field(name: name, value: trimmed(text[text.index(after: colon)...])))
        }
        return ResponseHead(protocolName: protocolName, statusCode: statusCode, reason: reason, fields: fields)
    }

    /// The first field with this name, ignoring case.
    package subscript(name: String) -> String? {
        let wanted = name.lowercased()
        return fields.first { $0.name.lowercased() == wanted }?.value
    }

    package var icyName: String? { self["icy-name"] }
    package var icyGenre: String? { self["icy-genre"] }
    package var icyURL: String? { self["icy-url"] }
    package var icyDescription: String? { self["icy-description"] }
    package var server: String? { self["server"] }

    /// kbit/s: the first number of "128" or "128,128" (some servers repeat it).
    package var icyBitrate: Int? {
        guard let value = self["icy-br"] else { return nil }
        let digits = value.prefix { $0.isASCII && $0.isNumber }
        return Int(digits)
    }

    /// `icy-pub` (or Icecast's `ice-public`): 1 listed in a directory, 0 not.
    package var isPublic: Bool? {
        switch self["icy-pub"] ?? self["ice-public"] {
        case "1": true
        case "0": false
        default: nil
        }
    }

    /// The media type, lowercased, parameters (`; charset=...`) removed.
    package var contentType: String? {
        guard let value = self["content-type"] else { return nil }
        let mediaType = trimmed(value.prefix { $0 != ";" }).lowercased()
        return mediaType.isEmpty ? nil : mediaType
    }

    package var metaint: MetaintValue {
        guard let value = self["icy-metaint"] else { return .absent }
        guard let interval = Int(value), interval > 0 else { return .invalid(value) }
        return .interval(interval)
    }

    package var payload: PayloadKind {
        guard let contentType else { return .audio(nil) }
        switch contentType {
        case "audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg", "audio/x-mp3", "audio/mpg":
            return .audio(.mp3)
        case "audio/aac", "audio/aacp", "audio/x-aac", "audio/x-aacp":
            return .audio(.aac)
        case "application/octet-stream":
            return .audio(nil)
        case "audio/ogg", "application/ogg", "audio/x-ogg", "audio/vorbis", "audio/opus":
            return .ogg
        case "audio/x-scpls", "application/pls+xml", "audio/scpls":
            return .playlist(.pls)
        case "audio/x-mpegurl", "audio/mpegurl", "application/vnd.apple.mpegurl", "application/x-mpegurl":
            return .playlist(.m3u)
        default:
            if let unsupported = UnsupportedFormat(mediaType: contentType) { return .unsupported(unsupported) }
            return .other(contentType)
        }
    }
}

/// What `icy-metaint` says.
package enum MetaintValue: Sendable, Hashable {
    case absent
    case interval(Int)
    /// Zero, negative or not a number: the raw text, for the error message.
    case invalid(String)
}

/// What the body of a response is, judged from its content type.
package enum PayloadKind: Sendable, Hashable {
    /// A stream to frame; `nil` codec means "sniff the bytes" (octet-stream or no content type).
    case audio(AudioCodec?)
    /// An Ogg stream: the codec (Vorbis, Opus, or one airtap cannot read) shows in its first pages.
    case ogg
    case playlist(PlaylistFormat)
    /// Audio (or video) in a container or codec airtap does not read: a permanent answer, not retried.
    case unsupported(UnsupportedFormat)
    /// Anything else (an HTML error page, say): the media type.
    case other(String)
}

package enum ResponseHeadError: Error, Sendable, Hashable {
    case malformedStatusLine(String)
}

/// A stream format airtap knows by name but cannot read, for the one-line error
/// "unsupported stream format: audio/webm (Matroska)".
package struct UnsupportedFormat: Sendable, Hashable, CustomStringConvertible {
    /// The media type as the server sent it (lowercased), or what the bytes showed.
    package let mediaType: String
    /// The container or codec, for people: "Matroska", "FLAC in Ogg", "HLS".
    package let name: String

    package init(mediaType: String, name: String) {
        self.mediaType = mediaType
        self.name = name
    }

    /// The formats recognised by media type alone; nil for a type that is not known audio.
    package init?(mediaType: String) {
        let name: String
        switch mediaType {
        case "audio/webm", "video/webm": name = "Matroska"
        case "audio/x-matroska", "video/x-matroska", "audio/matroska", "video/matroska": name = "Matroska"
        case "audio/flac", "audio/x-flac": name = "FLAC"
        case "video/ogg": name = "Ogg video"
        default: return nil
        }
        self.init(mediaType: mediaType, name: name)
    }

    package var description: String { "\(mediaType) (\(name))" }
}
