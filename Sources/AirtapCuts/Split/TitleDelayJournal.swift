#if canImport(Glibc)
import Glibc
#endif
import AirtapStations
import AirtapSupport
import FoundationEssentials

/// Where a station's learned title delay is kept between runs: one small JSON file per station,
/// `$XDG_STATE_HOME/airtap/title-delay/ID.json` (else `~/.local/state/airtap/...`), holding the
/// recent samples. Written whole through a temporary file and a rename, so two recordings of one
/// station (or a kill) leave either file, never half of one. Forgetting is removing the file
/// (`airtap probe ID --forget-title-delay`).
package struct TitleDelayJournal: Sendable, Hashable {
    /// The station's file.
    package let path: String

    /// A file of a few hundred bytes; anything larger was not written by airtap.
    static let sizeLimit = 16 * 1024

    package init(path: String) {
        self.path = path
    }

    /// The journal of station `id` under `environment`'s state folder; nil without
    /// `XDG_STATE_HOME` or `HOME`, or for an id that is not a plain file name.
    package init?(stationID id: String, environment: [String: String]) {
        guard let folder = Self.folder(environment: environment) else { return nil }
        self.init(stationID: id, folder: folder)
    }

    /// The journal of station `id` in `folder`; nil only for an empty id or one too long for a
    /// file name.
    package init?(stationID id: String, folder: String) {
        guard let name = Self.fileName(for: id) else { return nil }
        self.init(path: folder + "/" + name + ".json")
    }

    /// `$XDG_STATE_HOME/airtap/title-delay`, else `~/.local/state/airtap/title-delay`.
    package static func folder(environment: [String: String]) -> String? {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/airtap/title-delay" }
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return home + "/.local/state/airtap/title-delay"
    }

    /// The id as a file name: itself, with `/`, `%`, control bytes and a leading `.` as `%XX`.
    /// A stations file allows ids such as `jazz/fm` (serve's paths), and each needs a journal of
    /// its own inside the folder.
    static func fileName(for id: String) -> String? {
        var bytes: [UInt8] = []
        for (index, byte) in id.utf8.enumerated() {
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "%") || byte < 0x20 || (index == 0 && byte == UInt8(ascii: ".")) {
                bytes += Array(("%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)).utf8)
            } else {
                bytes.append(byte)
            }
        }
        // Room for ".json" and the temporary's ".PID.tmp" within NAME_MAX.
        guard !bytes.isEmpty, bytes.count <= 230 else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    private struct Contents: Codable {
        var samples: [Double]
    }

    /// What was learned so far: empty for a missing, unreadable or foreign file (learning starts
    /// again, as with a new station).
    package func load() -> TitleDelayLearner {
        guard let data = try? BoundedFileRead.contents(of: path, limit: Self.sizeLimit),
              let contents = try? JSONDecoder().decode(Contents.self, from: data) else { return TitleDelayLearner() }
        return TitleDelayLearner(samples: contents.samples)
    }

    /// Keeps `learner`'s samples. Best effort: a recording never fails for its journal.
    package func save(_ learner: TitleDelayLearner) {
        guard let data = try? JSONEncoder().encode(Contents(samples: learner.samples)) else { return }
        StateFile.replace(path, with: data)
    }

    /// Removes what was learned. True when there was something to remove; throws when something
    /// is there that cannot go (a folder in the file's place, a state folder that is read-only).
    @discardableResult
    package func forget() throws(AirtapError) -> Bool {
        if unlink(path) == 0 { return true }
        let error = errno
        if error == ENOENT || error == ENOTDIR { return false }
        throw .localIO("cannot forget the title delay in \(path): \(errorText(error))")
    }
}

/// What is known of a station's title delay, as `probe` shows it.
package enum TitleDelayStatus: Sendable, Hashable {
    case off
    case setByHand(Double)
    case learned(TitleDelay)
    /// Not consistent yet: this many boundaries so far.
    case learning(boundaries: Int)

    /// The status for a station whose setting is `setting`, from its journal (nil: none kept).
    package init(setting: TitleDelaySetting, journal: TitleDelayJournal?) {
        switch setting {
        case .off: self = .off
        case .fixed(let seconds): self = .setByHand(seconds)
        case .auto:
            let learner = journal?.load() ?? TitleDelayLearner()
            self = learner.estimate.map(TitleDelayStatus.learned) ?? .learning(boundaries: learner.samples.count)
        }
    }

    /// `probe`'s line.
    package var text: String {
        switch self {
        case .off: "off (cuts around the title as it arrives)"
        case .setByHand(let seconds): "titles \(Self.describe(seconds)), set by hand"
        case .learned(let delay):
            "titles \(Self.describe(delay.seconds)), learned from \(delay.boundaries) boundaries (±\(Self.tenths(delay.spread)) s)"
        case .learning(let boundaries): "not learned yet (\(boundaries) boundar\(boundaries == 1 ? "y" : "ies") so far)"
        }
    }

    /// `probe --json`'s `title_delay` event.
    package func event(station: Station) -> MachineEvent {
        let (state, seconds, spread, boundaries): (String, Double?, Double?, Int?) = switch self {
        case .off: ("off", nil, nil, nil)
        case .setByHand(let seconds): ("set", seconds, nil, nil)
        case .learned(let delay): ("learned", delay.seconds, delay.spread, delay.boundaries)
        case .learning(let boundaries): ("learning", nil, nil, boundaries)
        }
        return MachineEvent("title_delay", [
            ("station", .string(station.id)), ("state", .string(state)), ("seconds", seconds.map(JSONValue.number)),
            ("spread_seconds", spread.map(JSONValue.number)), ("boundaries", boundaries.map(JSONValue.int)),
        ])
    }

    private static func describe(_ seconds: Double) -> String {
        seconds >= 0 ? "\(tenths(seconds)) s late" : "\(tenths(-seconds)) s early"
    }

    private static func tenths(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
