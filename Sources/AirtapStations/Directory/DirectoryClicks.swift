#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import CurlSource
import FoundationEssentials
import Locking
import Logging

/// The directory's rule for clients: when a station from it starts playing, `GET /json/url/UUID`
/// counts a click (its popularity order comes from these). airtap sends one at most once a day
/// per station, remembered under the state folder, and never lets it touch the stream: it runs
/// beside the job on the job's curl loop, bounded in time, and a failure is only logged.
package final class DirectoryClicks: Sendable {
    private let servers: DirectoryServers?
    private let loop: CurlMultiLoop
    private let journal: DirectoryClickJournal?
    private let logger: Logger
    private let now: @Sendable () -> Double
    /// Stations whose click this process has sent or is sending: `play` tuning back to a
    /// station does not ask the journal again.
    private let sent = Locked(Set<String>())

    /// How long one server may take for a click.
    static let timeLimit = 10.0
    /// A click is one short JSON object.
    static let maxAnswerBytes = 64 * 1024

    /// nil `servers` (an `AIRTAP_DIRECTORY` that is not a URL): no clicks at all.
    package convenience init(loop: CurlMultiLoop, environment: [String: String], logger: Logger,
                 now: @escaping @Sendable () -> Double = { Double(time(nil)) }) {
        var servers: DirectoryServers?
        do {
            servers = try DirectoryServers.choose(commandLine: nil, environment: environment)
        } catch {
            logger.warning("no station directory clicks: \(error)")
        }
        self.init(servers: servers, loop: loop, journal: DirectoryClickJournal(environment: environment), logger: logger, now: now)
    }

    package init(servers: DirectoryServers?, loop: CurlMultiLoop, journal: DirectoryClickJournal?, logger: Logger,
                 now: @escaping @Sendable () -> Double = { Double(time(nil)) }) {
        self.servers = servers
        self.loop = loop
        self.journal = journal
        self.logger = logger
        self.now = now
    }

    /// Counts a click for each of `stations` that came from the directory and has none in the
    /// last day. Returns at once, with the uuids whose click it sends.
    @discardableResult
    package func started(_ stations: [Station]) -> [String] {
        guard let servers else { return [] }
        let due = stations.compactMap(\.directoryUUID).filter { uuid in
            guard sent.withLock({ $0.insert(uuid).inserted }) else { return false }
            return journal?.isDue(uuid, now: now()) ?? true
        }
        guard !due.isEmpty else { return [] }
        Task.detached { [self] in
            let candidates = await servers.candidatesOffPool()
            for uuid in due { click(uuid, servers: candidates[...]) }
        }
        return due
    }

    /// One click, on the next server when one fails.
    private func click(_ uuid: String, servers: ArraySlice<String>) {
        guard let server = servers.first else { return }
        var client = DirectoryClient(servers: .fixed([server]), loop: loop)
        client.timeLimit = Self.timeLimit
        let options = client.requestOptions(server + "/json/url/\(uuid)")
        CurlFetch.start(options, maxBodyBytes: Self.maxAnswerBytes, timeLimit: Self.timeLimit, on: loop) { [self] outcome in
            if case .answered(let head, _) = outcome, head.statusLine.split(separator: " ").dropFirst().first?.first == "2" {
                journal?.record(uuid, at: now())
                logger.debug("directory click counted", metadata: ["uuid": "\(uuid)", "server": "\(server)"])
                return
            }
            logger.info("directory click not counted", metadata: ["uuid": "\(uuid)", "server": "\(server)", "outcome": "\(outcome)"])
            click(uuid, servers: servers.dropFirst())
        }
    }
}

/// When each directory station last had its click: one tiny file per station,
/// `$XDG_STATE_HOME/airtap/directory-clicks/UUID` (else `~/.local/state/airtap/...`), holding the
/// Unix time. Best effort: a missing or foreign file means a click is due.
package struct DirectoryClickJournal: Sendable, Hashable {
    package let folder: String

    /// A day between clicks of one station.
    static let interval = 24.0 * 3600

    package init(folder: String) {
        self.folder = folder
    }

    package init?(environment: [String: String]) {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            self.init(folder: state + "/airtap/directory-clicks")
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            self.init(folder: home + "/.local/state/airtap/directory-clicks")
        } else {
            return nil
        }
    }

    /// nil for anything but a uuid: the name must stay inside the folder.
    private func path(_ uuid: String) -> String? {
        Station.isDirectoryUUID(uuid) ? folder + "/" + uuid.lowercased() : nil
    }

    package func lastClick(_ uuid: String) -> Double? {
        guard let path = path(uuid), let data = try? BoundedFileRead.contents(of: path, limit: 64) else { return nil }
        // "nan" parses, and would compare as never due: only a real time counts.
        return Double(String(decoding: data, as: UTF8.self).trimmingSpacesAndNewlines()).flatMap { $0.isFinite ? $0 : nil }
    }

    package func isDue(_ uuid: String, now: Double) -> Bool {
        guard let last = lastClick(uuid) else { return true }
        // A time in the future is a clock that was wrong then: due.
        return now - last >= Self.interval || last > now + 60
    }

    /// Written whole through a temporary file and a rename (`StateFile`).
    package func record(_ uuid: String, at time: Double) {
        guard let path = path(uuid) else { return }
        StateFile.replace(path, with: Array("\(Int(time))\n".utf8))
    }
}
