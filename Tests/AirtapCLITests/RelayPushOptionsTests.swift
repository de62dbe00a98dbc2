import AirtapIngest
import AirtapKit
import AirtapStations
import ArgumentParser
import Testing
@testable import airtap

/// What `relay --to icecast://` asks of its station and its push, from the options alone.
@Suite("relay --to icecast:// options")
struct RelayPushOptionsTests {
    static let station = Station(id: "demo", name: "Demo", urls: ["http://127.0.0.1:9/"])

    static func options(_ arguments: [String]) throws -> IngestOptions {
        try RelayCommand.parse(["demo", "--to", "icecast://127.0.0.1/live"] + arguments).pushOptions(for: station)
    }

    @Test("Without --retries a push reconnects forever, with backoff and jitter, as --help says; a first connection that fails ends it")
    func foreverByDefault() throws {
        let policy = try #require(try Self.options([]).reconnect, "the station is not reconnected")
        #expect(policy.maxRetries == nil && policy.jitter > 0 && policy.maxDelay > policy.initialDelay, "\(policy)")
        #expect(!policy.retriesBeforeFirstAudio)
        let help = RelayCommand.helpMessage(columns: 1000)
        #expect(help.contains("reconnects to the station and to the server forever"), "\(help)")
    }

    @Test("--retries N bounds it, and a first connection that fails is tried again within it", arguments: [0, 3, 20])
    func bounded(retries: Int) throws {
        let policy = try #require(try Self.options(["--retries", "\(retries)"]).reconnect, "the station is not reconnected")
        #expect(policy.maxRetries == retries)
        #expect(policy.retriesBeforeFirstAudio)
    }
}
