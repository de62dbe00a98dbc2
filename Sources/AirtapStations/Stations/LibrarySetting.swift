import FoundationEssentials

/// stations.json's top-level `"library"`: whether recordings pay for the library's work
/// (ReplayGain's loudness decode, each track's fingerprint, the index). Off unless it says so:
///
///     "library": true
///     "library": { "path": "music/library.sqlite", "replaygain": true, "dedupe": false }
///
/// `true` is the object with every key left out. A relative `path` is read from the stations
/// file's folder.
package struct LibrarySetting: Sendable, Hashable, Decodable {
    /// False: `"library": false`, the same as leaving it out.
    package var isOn: Bool
    /// The index file; nil: the default (`LibraryIndex.defaultPath`).
    package var path: String?
    /// ReplayGain tags from each kept track's measured loudness.
    package var replayGain: Bool
    /// A track whose audio the index holds already is not kept.
    package var dedupe: Bool

    package static let keys = ["path", "replaygain", "dedupe"]

    package init(isOn: Bool, path: String? = nil, replayGain: Bool = true, dedupe: Bool = false) {
        self.isOn = isOn
        self.path = path
        self.replayGain = replayGain
        self.dedupe = dedupe
    }

    private enum CodingKeys: String, CodingKey {
        case path, replaygain, dedupe
    }

    package init(from decoder: any Decoder) throws {
        if let on = try? decoder.singleValueContainer().decode(Bool.self) {
            self.init(isOn: on)
            return
        }
        let container: KeyedDecodingContainer<CodingKeys>
        do {
            container = try decoder.container(keyedBy: CodingKeys.self)
        } catch {
            throw DecodingError.typeMismatch(LibrarySetting.self, DecodingError.Context(
                codingPath: decoder.codingPath, debugDescription: "not a library setting"))
        }
        let path = try container.decodeIfPresent(String.self, forKey: .path)
        if let path, path.isEmpty || path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw DecodingError.dataCorruptedError(forKey: .path, in: container,
                                                   debugDescription: "an empty path or one with control characters")
        }
        self.init(isOn: true, path: path, replayGain: try container.decodeIfPresent(Bool.self, forKey: .replaygain) ?? true,
                  dedupe: try container.decodeIfPresent(Bool.self, forKey: .dedupe) ?? false)
    }

    /// The same setting with a relative `path` made absolute from `folder`, and `~/` read as
    /// `home` (`$HOME`), as a shell would: Foundation alone would take the account's home from
    /// the password database instead, and a bare relative path would make a folder named `~`.
    package func resolvingPath(from folder: String, home: String? = ProcessInfo.processInfo.environment["HOME"]) -> LibrarySetting {
        guard let path, !path.hasPrefix("/") else { return self }
        var setting = self
        if path == "~" || path.hasPrefix("~/"), let home, home.hasPrefix("/") {
            setting.path = URL(fileURLWithPath: home + "/" + path.dropFirst(min(2, path.count))).standardizedFileURL.path
            return setting
        }
        let relative = path.hasPrefix("~") ? "./" + path : path
        setting.path = URL(fileURLWithPath: relative, relativeTo: URL(fileURLWithPath: folder, isDirectory: true))
            .standardizedFileURL.path
        return setting
    }
}
