import ICYWire
import LameEncoding

/// `--transcode mp3:128k` (stations.json `"transcode"`): re-encode whatever a station sends as
/// constant-bitrate MP3 at this bitrate, for players that read nothing else.
package struct TranscodeSetting: Sendable, Hashable, CustomStringConvertible {
    /// kbit/s, one an MP3 stream can have (`MP3Rates.bitrates`).
    package let bitrate: Int

    package init?(bitrate: Int) {
        guard MP3Rates.bitrates.contains(bitrate) else { return nil }
        self.bitrate = bitrate
    }

    /// `mp3:128k` or `mp3:128`; nil for anything else, a bitrate MP3 lacks included.
    package init?(parsing text: String) {
        var rest = Substring(text.lowercased())
        guard rest.hasPrefix("mp3:") else { return nil }
        rest = rest.dropFirst(4)
        if rest.hasSuffix("k") { rest = rest.dropLast() }
        guard rest.count <= 4, !rest.isEmpty, rest.allSatisfy(\.isASCII), let kbps = Int(rest) else { return nil }
        self.init(bitrate: kbps)
    }

    package var description: String { "mp3:\(bitrate)k" }

    /// One line for a wrong value, after what it was given as (`--transcode`, `transcode`).
    package static func problem(with text: String) -> String {
        "'\(InertText.render(text, maxUTF8Bytes: 40))' \(expected)"
    }

    /// What a wrong value is told, after the value itself.
    static let expected = "takes mp3:BITRATE with a bitrate in kbit/s that MP3 has ("
        + MP3Rates.bitrates.map(String.init).joined(separator: ", ") + "), e.g. mp3:128k"
}
