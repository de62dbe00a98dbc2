import AirtapKit
import AirtapStations
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

@Suite("Sharding a fleet by rendezvous hashing")
struct ShardTests {
    static let ids = (0..<200).map { "station-\($0)" }

    @Test("K/N parses with K from 0 to N-1, and nothing else",
          arguments: [("0/4", true), ("3/4", true), ("0/1", true), ("4/4", false), ("-1/4", false), ("1/0", false),
                      ("a/4", false), ("1/", false), ("1/4/2", false), ("0/10001", false), ("", false)])
    func parsing(text: String, valid: Bool) {
        #expect((Shard(parsing: text) != nil) == valid, "\(text)")
    }

    @Test("Every station has exactly one owner, and the shares are even")
    func oneOwnerEach() throws {
        let shards = (0..<4).compactMap { Shard(index: $0, count: 4) }
        var counts = [0, 0, 0, 0]
        for id in Self.ids {
            let owners = shards.filter { $0.owns(id) }
            try #require(owners.count == 1, "\(id) has \(owners.count) owners")
            counts[owners[0].index] += 1
        }
        // 50 each on average; a binomial spread of about ±6. The hash is fixed, so this never flakes.
        #expect(counts.allSatisfy { (32...68).contains($0) }, "\(counts)")
    }

    @Test("Going from 4 to 5 shards moves about a fifth of the stations, all of them to the new shard")
    func growingMovesAFifth() {
        let moved = Self.ids.filter { Shard.owner(of: $0, among: 4) != Shard.owner(of: $0, among: 5) }
        #expect(moved.allSatisfy { Shard.owner(of: $0, among: 5) == 4 })
        // Theory: 200 / 5 = 40 (binomial sd about 5.7); rendezvous hashing moves no other station.
        #expect((23...57).contains(moved.count), "\(moved.count) moved")
    }

    @Test("The assignment is the same on every machine and in every run (a fixed hash, not Swift's seeded one)")
    func stableAssignment() {
        #expect(Self.ids.prefix(8).map { Shard.owner(of: $0, among: 4) } == Self.pinned)
    }
    /// Pinned once: changing the hash would move stations between the machines of a running fleet.
    static let pinned = [3, 3, 2, 3, 3, 0, 1, 0]

    @Test("record needs stations or --all, not both, and a shard that owns nothing idles to --for and exits 0")
    func usage() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [{ "id": "one", "url": "http://127.0.0.1:9/x" }] }"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let neither = try await AirtapBinary.run(["record"], in: folder)
        #expect(neither.status == 1 && neither.stderr.contains("--all"), "\(neither.stderr)")
        let both = try await AirtapBinary.run(["record", "one", "--all"], in: folder)
        #expect(both.status == 1 && both.stderr.contains("not both"), "\(both.stderr)")
        let badShard = try await AirtapBinary.run(["record", "--all", "--shard", "4/4"], in: folder)
        #expect(badShard.status == 1, "\(badShard.stderr)")
        // "one" belongs to exactly one of two shards; the other has nothing to record.
        let idle = Shard.owner(of: "one", among: 2) == 0 ? 1 : 0
        let idled = try await AirtapBinary.run(["record", "--all", "--shard", "\(idle)/2", "--for", "1s", "--out", "out"], in: folder)
        #expect(idled.status == 0, "\(idled.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("out/one").path))
    }

    @Test("A shard that owns nothing and has no limit idles until SIGTERM, then exits 0")
    func idleShardStopsOnSignal() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [{ "id": "one", "url": "http://127.0.0.1:9/x" }] }"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let idle = Shard.owner(of: "one", among: 2) == 0 ? 1 : 0
        let stations = folder.appendingPathComponent("stations.json").path
        let child = try AirtapChild(["record", "--stations", stations, "--all", "--shard", "\(idle)/2",
                                     "--out", folder.appendingPathComponent("out").path])
        defer { if child.process.isRunning { child.process.terminate() } }
        // Logged once the run traps the signals.
        try await waitFor("the shard's line") { child.stderr.contains("shard \(idle)/2: 0 stations") || !child.process.isRunning }
        #expect(child.process.isRunning, "\(child.stderr)")
        let status = try await child.terminate()
        #expect(child.process.terminationReason == .exit && status == 0, "\(child.stderr)")
    }

    @Test("A shard that owns nothing still answers at --metrics-listen's /metrics (health checks probe it)")
    func idleShardServesMetrics() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [{ "id": "one", "url": "http://127.0.0.1:9/x" }] }"#)
        defer { try? FileManager.default.removeItem(at: folder) }
        let idle = Shard.owner(of: "one", among: 2) == 0 ? 1 : 0
        let stations = folder.appendingPathComponent("stations.json").path
        let child = try AirtapChild(["record", "--stations", stations, "--all", "--shard", "\(idle)/2", "--log-level", "info",
                                     "--metrics-listen", "127.0.0.1:0", "--out", folder.appendingPathComponent("out").path])
        defer { if child.process.isRunning { child.process.terminate() } }
        try await waitFor("the shard's line") { child.stderr.contains("shard \(idle)/2: 0 stations") || !child.process.isRunning }
        let line = try #require(child.stderr.split(separator: "\n").first { $0.contains("metrics at http://127.0.0.1:") },
                                "no metrics line: \(child.stderr)")
        let port = try #require(line.split(separator: "127.0.0.1:").last?.split(separator: "/").first.flatMap { Int($0) })
        // As a health check asks: again until it answers (one loaded run saw a connection closed
        // without an answer, which a probe would retry too).
        var answers: [String] = []
        var metrics: StationClient.Response?
        // Room for a child under ThreadSanitizer beside a loaded suite: each try is bounded well
        // inside the deadline, so a connection the child drops costs one try, not the test.
        try await waitFor("/metrics to answer 200", seconds: 180, diagnosis: { "\(answers) \(child.stderr)" }) {
            let response = try? await StationClient.fetch(port: port, path: "/metrics", timeout: .seconds(20))
            answers.append(response.map { "\($0.status.map(String.init) ?? "no status"), \($0.body.count) bytes" } ?? "no connection")
            metrics = response
            return response?.status == 200
        }
        let page = String(decoding: metrics?.body ?? [], as: UTF8.self)
        #expect(page.contains("airtap_uptime_seconds "), "\(page)")
        let status = try await child.terminate()
        #expect(child.process.terminationReason == .exit && status == 0, "\(child.stderr)")
    }

    /// Whether the station's folder below `out` holds audio (a file being written, or one saved).
    static func hasAudio(_ station: String, in out: URL) -> Bool {
        FileManager.default.enumerator(atPath: out.appendingPathComponent(station).path)?
            .contains { ($0 as? String).map { $0.hasSuffix(".mp3") || $0.hasSuffix(".mp3.part") } ?? false } ?? false
    }

    @Test("Four processes with --all --shard k/4 record each of 200 stations exactly once", .waitingForChildren)
    func fourShardsRecordEveryStationOnce() async throws {
        try await withStation(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime)) { server in
            let entries = Self.ids.map { #"{ "id": "\#($0)", "name": "\#($0)", "url": "\#(server.streamURL)" }"# }
            let folder = try AirtapBinary.temporaryFolder(with: #"{ "stations": [\#(entries.joined(separator: ",\n"))] }"#)
            defer { try? FileManager.default.removeItem(at: folder) }
            let results = try await withThrowingTaskGroup(of: (Int, AirtapBinary.Result).self) { group in
                for shard in 0..<4 {
                    group.addTask {
                        // Each shard runs until every station it owns is recording, then is stopped:
                        // a limit of seconds could come while fifty stations in one process under
                        // ThreadSanitizer on a loaded machine still wait for their first audio
                        // (exit 2). --for only bounds a run the test fails to stop.
                        let run = try await AirtapBinary.launch(["record", "--all", "--shard", "\(shard)/4", "--for", "600s",
                                                                 "--out", "out\(shard)", "--no-silence-search"], in: folder)
                        let out = folder.appendingPathComponent("out\(shard)")
                        let owned = Self.ids.filter { Shard.owner(of: $0, among: 4) == shard }
                        try await waitFor("shard \(shard) recording its \(owned.count) stations", seconds: 180, every: .milliseconds(250),
                                          diagnosis: { "\(owned.filter { !Self.hasAudio($0, in: out) }.count) without audio; \(run.stderrSoFar.suffix(2000))" }) {
                            !run.isRunning || owned.allSatisfy { Self.hasAudio($0, in: out) }
                        }
                        run.terminate()
                        return (shard, try await run.result())
                    }
                }
                var results: [Int: AirtapBinary.Result] = [:]
                for try await (shard, result) in group { results[shard] = result }
                return results
            }
            var recordedBy: [String: [Int]] = [:]
            for shard in 0..<4 {
                let result = try #require(results[shard])
                #expect(result.status == 0, "shard \(shard): \(result.stderr)")
                let out = folder.appendingPathComponent("out\(shard)")
                // Each shard locked exactly the stations it owns (locks are taken at the start and
                // stay): a station it took wrongly shows here even if it had no audio at the stop.
                let locks = Set((FileManager.default.enumerator(atPath: out.path)?.compactMap { $0 as? String } ?? [])
                    .filter { $0.hasSuffix(".lock") && $0 != ".airtap.lock" }.map { String($0.split(separator: "/").last ?? "") })
                let ownedLocks = Set(Self.ids.filter { Shard.owner(of: $0, among: 4) == shard }.map { ".airtap-\($0).lock" })
                #expect(locks == ownedLocks, "shard \(shard): \(locks.symmetricDifference(ownedLocks).sorted())")
                for station in (try? FileManager.default.contentsOfDirectory(atPath: out.path)) ?? [] where !station.hasPrefix(".") {
                    let files = FileManager.default.enumerator(atPath: out.appendingPathComponent(station).path)?
                        .compactMap { $0 as? String }.filter { $0.hasSuffix(".mp3") } ?? []
                    if !files.isEmpty { recordedBy[station, default: []].append(shard) }
                }
            }
            #expect(recordedBy.count == Self.ids.count, "\(Self.ids.count - recordedBy.count) stations recorded by nobody")
            for (station, shards) in recordedBy {
                #expect(shards == [Shard.owner(of: station, among: 4)], "\(station) recorded by shards \(shards)")
            }
        }
    }
}
