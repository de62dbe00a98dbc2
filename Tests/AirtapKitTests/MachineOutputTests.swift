@testable import AirtapKit
@testable import AirtapStations
@testable import AirtapSupport
import AirtapTestSupport
import Foundation
import TestStation
import Testing

/// `--json` on record, play, serve and list: one object per line, one schema.
@Suite("Machine-readable output")
struct MachineOutputTests {
    /// Every stdout line as an object with an RFC 3339 `time` and an `event`.
    static func objects(_ result: AirtapBinary.Result) throws -> [[String: Any]] {
        try result.stdoutLines.map { line in
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            let time = try #require(object["time"] as? String, "\(line)")
            #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(time)")
            #expect(object["event"] is String, "\(line)")
            return object
        }
    }

    static func events(_ objects: [[String: Any]]) -> [String] { objects.compactMap { $0["event"] as? String } }

    @Test("A line is one object, its text escaped; times are RFC 3339 UTC")
    func lineFormat() throws {
        let event = MachineEvent("title", [("station", .string("a")), ("raw", .string("a\"b\\c\n\u{1B}[2J\u{2028}")),
                                           ("artist", nil), ("stream_seconds", .number(1.23456)), ("bytes", .int(7))])
        let line = event.line(time: "2026-11-23T21:00:00.000Z")
        #expect(line == #"{"time":"2026-11-23T21:00:00.000Z","event":"title","station":"a","raw":"a\"b\\c\n\u001b[2J\u2028","stream_seconds":1.235,"bytes":7}"#)
        #expect(!line.contains("\n"))
        #expect(MachineEventWriter.rfc3339(seconds: 0, milliseconds: 5) == "1970-01-01T00:00:00.005Z")
        #expect(MachineEventWriter.rfc3339(seconds: 1_795_467_600, milliseconds: 999) == "2026-11-23T21:00:00.999Z")
    }

    @Test("record --json: head, format, titles, a file event per file written, and the stop last")
    func recordJSON() async throws {
        try await withStation { server in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try await AirtapBinary.run(["record", server.streamURL, "-o", "out", "-t", "6s", "--json"], in: folder)
            #expect(result.status == 0, "\(result.stderr)")
            let objects = try Self.objects(result)
            let events = Self.events(objects)
            // In order: the reconnect of a station that closed comes after the head it followed.
            #expect(events.first == "head", "\(result.stdout)")
            #expect(events.contains("format"))
            #expect(events.contains("title"))
            #expect(events.last == "stop")
            #expect(objects.last?["reason"] as? String == "limit_reached")
            #expect(objects.first?["bitrate_kbps"] as? Int == 128)
            #expect(objects.first { $0["event"] as? String == "format" }?["sample_rate_hz"] as? Int == 44100)
            let files = objects.filter { $0["event"] as? String == "file" }
            let written = filesBelow(folder.appendingPathComponent("out")).filter { $0.hasSuffix(".mp3") }
            #expect(files.count == written.count && !written.isEmpty, "\(files) \(written)")
            for file in files {
                let path = try #require(file["path"] as? String)
                #expect(FileManager.default.fileExists(atPath: path), "\(path)")
                #expect(file["seconds"] is Double || file["seconds"] is Int)
                #expect((file["audio_bytes"] as? Int ?? 0) > 0)
            }
            #expect(Set(objects.compactMap { $0["station"] as? String }) == [Station(adHocURL: server.streamURL).id])
        }
    }

    @Test("record --json: a reconnect is an event; an error stop carries its message and exit code")
    func reconnectAndErrorJSON() async throws {
        // The station closes after 2 s of audio; with one retry the second close ends the run.
        try await withStation(Programs.configuration(maxSeconds: 2)) { server in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try await AirtapBinary.run(["record", server.streamURL, "-o", "out", "--retries", "1", "--json"], in: folder)
            let objects = try Self.objects(result)
            let reconnects = objects.filter { $0["event"] as? String == "reconnect" }
            #expect(reconnects.first?["attempt"] as? Int == 1, "\(result.stdout)")
            #expect(reconnects.first?["after_seconds"] is Double || reconnects.first?["after_seconds"] is Int)
            #expect(reconnects.first?["reason"] is String)
            #expect(Self.events(objects).last == "stop")
            if result.status != 0 {
                #expect(objects.last?["exit_code"] as? Int == Int(result.status))
                #expect(objects.last?["error"] is String)
            }
        }
        // Nothing listens: the first connect fails, the stop says why.
        let folder = try AirtapBinary.temporaryFolder()
        let refused = try await AirtapBinary.run(["record", "http://127.0.0.1:9/x", "-o", "out", "--retries", "0", "--json"], in: folder)
        #expect(refused.status == 2)
        let last = try Self.objects(refused).last
        #expect(last?["event"] as? String == "stop")
        #expect(last?["reason"] as? String == "error")
        #expect(last?["exit_code"] as? Int == 2)
    }

    @Test("serve --json: listening first, then the stream's events; play --json: titles and the stop")
    func serveAndPlayJSON() async throws {
        try await withStation { server in
            let serve = try await AirtapBinary.run(["serve", server.streamURL, "--listen", "127.0.0.1:0", "-t", "15s", "--json"])
            #expect(serve.status == 0, "\(serve.stderr)")
            let served = try Self.objects(serve)
            #expect(served.first?["event"] as? String == "listening")
            #expect((served.first?["url"] as? String)?.hasPrefix("http://127.0.0.1:") == true)
            #expect(Self.events(served).contains("head"))
            #expect(Self.events(served).last == "stop")

            let play = try await AirtapBinary.run(["play", server.streamURL, "--device", "null", "--buffer", "0.2s", "--retries", "0", "--json"])
            #expect(play.status == 0, "\(play.stderr)")
            let played = try Self.objects(play)
            #expect(Self.events(played).contains("title"))
            #expect(Self.events(played).last == "stop")
        }
    }

    @Test("list --json: one station object per station")
    func listJSON() async throws {
        let folder = try AirtapBinary.temporaryFolder(with: """
            {"stations": [{"id": "a", "name": "A", "url": "http://127.0.0.1:9/a"},
                          {"id": "b", "urls": ["http://127.0.0.1:9/b", "http://127.0.0.1:9/c"], "schedule": {"cron": "0 1 * * *", "duration": "1h"}}]}
            """)
        let result = try await AirtapBinary.run(["list", "--json"], in: folder)
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try Self.objects(result)
        #expect(objects.map { $0["station"] as? String } == ["a", "b"])
        #expect(Self.events(objects) == ["station", "station"])
        #expect(objects[1]["urls"] as? [String] == ["http://127.0.0.1:9/b", "http://127.0.0.1:9/c"])
        #expect(objects[1]["schedule_duration"] as? String == "1h")
    }
}
