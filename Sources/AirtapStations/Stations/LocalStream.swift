import AirtapSupport
import FoundationEssentials
import ICYWire

/// A stream read from this machine instead of the network: standard input (`-`), or a file
/// (`file:///path`, or a path ending in an audio extension, `./show.mp3`). The same pipeline,
/// recorder and player read it as a station's.
package enum LocalStream: Sendable, Hashable {
    case standardInput
    /// An absolute path.
    case file(String)

    /// What a command-line argument names locally, or nil for a station id or an http(s) URL.
    /// A path must end in an audio extension (or be given as a `file://` URL): other paths
    /// stay what they were, a local .pls or .m3u playlist.
    package static func parse(_ argument: String, currentFolder: String = FileManager.default.currentDirectoryPath)
        throws(AirtapError) -> LocalStream? {
        if argument == "-" { return .standardInput }
        if argument.lowercased().hasPrefix("file://") {
            guard let url = URL(string: argument), url.isFileURL, !url.path.isEmpty, url.host() ?? "" == "" else {
                throw .usage("'\(InertText.render(argument, maxUTF8Bytes: 200))' is not a file URL (file:///path/to/file)")
            }
            return .file(url.standardizedFileURL.path)
        }
        guard !argument.contains("://"), let dot = argument.lastIndex(of: "."),
              audioExtensions.contains(argument[argument.index(after: dot)...].lowercased()) else { return nil }
        let absolute = argument.hasPrefix("/") ? argument : currentFolder + "/" + argument
        return .file(URL(fileURLWithPath: absolute).standardizedFileURL.path)
    }

    /// What a file holding a stream of the codecs airtap reads is called.
    static let audioExtensions: Set<String> = ["mp3", "mp2", "mpga", "aac", "adts", "ts", "ogg", "oga", "opus"]

    /// How a station's URL list holds it: `-`, or a file URL.
    package var url: String {
        switch self {
        case .standardInput: "-"
        case .file(let path): URL(fileURLWithPath: path).absoluteString
        }
    }

    /// How messages name it.
    package var displayName: String {
        switch self {
        case .standardInput: "standard input"
        case .file(let path): path
        }
    }
}

extension Station {
    /// The station of a local stream: named after its file (without the extension); its id
    /// that name as a slug and a hash of the path, so two files of one name get two ids.
    package init(localStream: LocalStream) {
        switch localStream {
        case .standardInput:
            self.init(id: "stdin", name: "stdin", urls: [localStream.url])
        case .file(let path):
            let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            self.init(id: Self.slug(file, maxBytes: 80) + "-" + StableHash.shortHex(path), name: file.isEmpty ? "file" : file,
                      urls: [localStream.url])
        }
    }

    /// Set when the station's stream is local (its one URL `-` or a file URL).
    package var localStream: LocalStream? {
        guard urls.count == 1, let url = urls.first else { return nil }
        if url == "-" { return .standardInput }
        guard url.hasPrefix("file://"), let parsed = URL(string: url), parsed.isFileURL else { return nil }
        return .file(parsed.path)
    }
}
