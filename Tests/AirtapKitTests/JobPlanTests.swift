@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapRecording
import AirtapRelay
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import CurlSource
import Foundation
import Logging
import Testing

/// What the jobs make of their plans, without the command line or a process: which stations a
/// job runs, how its streams are requested, and what a recording does to its output folder
/// before the first byte (leftovers of a killed run, the lock).
@Suite("Job plans")
struct JobPlanTests {
    static let catalog = StationCatalog(
        stations: [
            Station(id: "jazz", name: "Jazz", urls: ["http://127.0.0.1:9/jazz"]),
            Station(id: "news", name: "News", urls: ["http://127.0.0.1:9/news"]),
        ],
        source: "/etc/airtap/stations.json")

    // MARK: Station choice

    @Test("Ids and URLs resolve in the order given")
    func choosesInOrder() throws {
        let chosen = try Self.catalog.choose(["news", "http://127.0.0.1:9/other", "jazz"])
        #expect(chosen.map(\.id) == ["news", chosen[1].id, "jazz"])
        #expect(chosen[1].urls == ["http://127.0.0.1:9/other"])
    }

    @Test("A station named twice is a usage error (exit 1), also through its URL")
    func namedTwice() {
        #expect(throws: AirtapError.usage("station 'jazz' is named twice")) {
            try Self.catalog.choose(["jazz", "news", "jazz"])
        }
        let url = "http://127.0.0.1:9/same"
        #expect(throws: AirtapError.self) { try Self.catalog.choose([url, url]) }
    }

    @Test("An unknown id is refused with the known ones")
    func unknownStation() {
        #expect(throws: AirtapError.unknownStation("blues", known: ["jazz", "news"])) {
            try Self.catalog.choose(["jazz", "blues"])
        }
    }

    @Test("--all: every station of the file; no file or an empty one is a configuration error")
    func all() throws {
        #expect(try Self.catalog.choose([], all: true).map(\.id) == ["jazz", "news"])
        let noFile = StationCatalog(stations: [], source: nil)
        #expect(throws: AirtapError.configuration(StationCatalog.noFileMessage())) { try noFile.choose([], all: true) }
        let empty = StationCatalog(stations: [], source: "/tmp/empty.json")
        #expect(throws: AirtapError.configuration("--all: /tmp/empty.json defines no station")) {
            try empty.choose([], all: true)
        }
    }

    @Test("play's dial: an id puts the file's stations on it at that one, Next and Previous stop at the ends; a URL is a dial of one")
    func dial() throws {
        var dial = try Self.catalog.dial("jazz")
        #expect(dial.current.id == "jazz")
        #expect(!dial.canGoPrevious && dial.canGoNext)
        let backFromFirst = dial.move(forward: false)
        #expect(!backFromFirst)
        let onward = dial.move(forward: true)
        #expect(onward)
        #expect(dial.current.id == "news")
        #expect(dial.canGoPrevious && !dial.canGoNext)
        let pastLast = dial.move(forward: true)
        #expect(!pastLast)
        #expect(dial.current.id == "news")
        let url = try Self.catalog.dial("http://127.0.0.1:9/other")
        #expect(url.stations.count == 1 && url.current.urls == ["http://127.0.0.1:9/other"])
        #expect(!url.canGoNext && !url.canGoPrevious)
        #expect(throws: AirtapError.unknownStation("blues", known: ["jazz", "news"])) { try Self.catalog.dial("blues") }
        #expect(StationDial(stations: Self.catalog.stations, index: 2) == nil)
    }

    // MARK: Connection

    @Test("Station headers first (sorted), then the command line's; the command's User-Agent wins over the station's")
    func ingestOptions() {
        var station = Station(id: "s", name: "S", urls: ["http://127.0.0.1:9/"])
        station.headers = ["X-B": "2", "X-A": "1"]
        station.userAgent = "station-agent"
        var plan = ConnectionPlan()
        plan.headers = ["X-C: 3"]
        plan.connectTimeout = 4
        #expect(plan.ingestOptions(for: station).headers == ["X-A: 1", "X-B: 2", "X-C: 3"])
        #expect(plan.ingestOptions(for: station).userAgent == "station-agent")
        #expect(plan.ingestOptions(for: station).connectTimeout == 4)
        #expect(plan.ingestOptions(for: station).reconnect == nil, "probe does not reconnect")
        plan.userAgent = "mine"
        plan.retries = 3
        let options = plan.ingestOptions(for: station, reconnects: true)
        #expect(options.userAgent == "mine")
        #expect(options.reconnect?.maxRetries == 3)
    }

    @Test("A push retries before the first audio only when --retries bounds it")
    func pushOptions() {
        let station = Station(id: "s", name: "S", urls: ["http://127.0.0.1:9/"])
        var plan = ConnectionPlan()
        #expect(RelayJob.pushOptions(plan, for: station).reconnect?.retriesBeforeFirstAudio == false)
        plan.retries = 2
        #expect(RelayJob.pushOptions(plan, for: station).reconnect?.retriesBeforeFirstAudio == true)
    }

    @Test("--for wins over --until; --until counts from the wall clock at the start")
    func runLimit() throws {
        #expect(RunLimit(seconds: nil, until: nil) == nil)
        #expect(RunLimit(seconds: 5, until: ClockTime(parsing: "10:00"))?.seconds() == 5)
        let limit = try #require(RunLimit(seconds: nil, until: ClockTime(parsing: "23:59")))
        let seconds = limit.seconds()
        #expect(seconds > 0 && seconds <= 24 * 3600, "\(seconds)")
    }

    // MARK: Recording folder, locks and leftovers

    /// A folder of its own below the temporary folder, removed at the end.
    static func withFolder(_ body: (URL) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-plan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try body(folder)
    }

    @Test("The output folder is standardized and created, with its parents")
    func outputDirectory() throws {
        try Self.withFolder { folder in
            let plan = try RecordingPlan(outputDirectory: folder.path + "/./a/../nested/out").creatingOutputDirectory()
            #expect(plan.outputDirectory == folder.standardizedFileURL.path + "/nested/out")
            var isFolder: ObjCBool = false
            #expect(FileManager.default.fileExists(atPath: plan.outputDirectory, isDirectory: &isFolder) && isFolder.boolValue)
        }
    }

    @Test("Locking a station finishes what a killed run left in its folder; into one file (--single) it is left alone")
    func leftoversFinishedOnLock() throws {
        let station = Station(id: "jazz", name: "Jazz", urls: ["http://127.0.0.1:9/jazz"])
        for single in [false, true] {
            try Self.withFolder { folder in
                let stationFolder = folder.appendingPathComponent("Jazz")
                try FileManager.default.createDirectory(at: stationFolder, withIntermediateDirectories: true)
                let part = stationFolder.appendingPathComponent("Song.mp3.part")
                try Data(LeftoverRecoveryTests.frames(40)).write(to: part)
                var plan = RecordingPlan(outputDirectory: folder.path)
                plan.singleFile = single ? "all.mp3" : nil
                let locks = try plan.lock([station], logger: Logger(label: "test"))
                #expect(locks.count == 1)
                #expect(FileManager.default.fileExists(atPath: part.path) == single, "single: \(single)")
                let made = FileManager.default.enumerator(atPath: stationFolder.path)?.allObjects as? [String] ?? []
                #expect(made.contains { $0.hasPrefix("incomplete/") && $0.hasSuffix(".mp3") } == !single, "\(made)")
                withExtendedLifetime(locks) {}
            }
        }
    }

    @Test("A station another recording holds is refused (exit 4)")
    func heldLock() throws {
        let station = Station(id: "jazz", name: "Jazz", urls: ["http://127.0.0.1:9/jazz"])
        try Self.withFolder { folder in
            let plan = RecordingPlan(outputDirectory: folder.path)
            let held = try plan.lock([station], logger: Logger(label: "test"))
            let error = #expect(throws: AirtapError.self) { try plan.lock([station], logger: Logger(label: "test")) }
            #expect(error?.exitCode == 4)
            withExtendedLifetime(held) {}
        }
    }

    // MARK: Relay destination

    @Test("--to: a file, or an Icecast mount with its password from --password-file")
    func relayDestination() throws {
        guard case .file(.file(path: "out.mp3")) = try RelayDestination.parse("out.mp3", passwordFile: nil) else {
            Issue.record("out.mp3 is not a file destination")
            return
        }
        try Self.withFolder { folder in
            let passwordFile = folder.appendingPathComponent("password").path
            #expect(FileManager.default.createFile(atPath: passwordFile, contents: Data("hackme\n".utf8),
                                                   attributes: [.posixPermissions: 0o600]))
            let destination = try RelayDestination.parse("icecast://source@127.0.0.1:9/live", passwordFile: passwordFile)
            guard case .icecast(let target, let password) = destination else {
                Issue.record("\(destination) is not an Icecast destination")
                return
            }
            #expect(password.value == "hackme" && password.warning == nil)
            #expect(target.description.contains("127.0.0.1:9/live"), "\(target)")
        }
    }

    // MARK: Sessions

    @Test("A sink stops its own station through the job's sessions, and no other; a station not made yet is no error")
    func stopsByStation() async {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let sessions = JobSessions()
        let made = ["a", "b"].map { id in
            sessions.add(StationSession(station: Station(id: id, name: id, urls: ["http://127.0.0.1:9/"]), loop: loop,
                                        options: IngestOptions(), sinks: [], logger: Logger(label: "test")))
        }
        sessions.stop("not-yet", .userRequest)
        sessions.stopper(for: "b")(.limitReached)
        #expect(await made[1].stopped() == .limitReached)
        #expect(made[0].state == .idle)
        made[0].stop(.userRequest)
        #expect(await made[0].stopped() == .userRequest)
    }
}
