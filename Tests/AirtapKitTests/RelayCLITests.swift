import AirtapSupport
import AirtapTestSupport
import Foundation
import ICYWire
import Locking
@testable import TestStation
import Testing

/// `airtap relay` and `airtap serve` as a user runs them.
@Suite("Relay command line")
struct RelayCLITests {
    static func realtime() -> StationConfiguration {
        StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .realtime)
    }

    @Test("serve: ffmpeg reads the relay (with ICY metadata) and decodes 10 s of audio without an error")
    func ffmpegDecodes() async throws {
        try await withStation(Self.realtime()) { station in
            let serve = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0"])
            let port = try await serve.listeningPort()
            let folder = try AirtapBinary.temporaryFolder()
            let wav = folder.appendingPathComponent("out.wav")
            let ffmpeg = Process()
            ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            ffmpeg.arguments = ["-nostdin", "-v", "error", "-i", "http://127.0.0.1:\(port)/stream", "-t", "10", "-y", wav.path]
            let errors = ChildProcesses.pipe()
            ffmpeg.standardError = errors
            ffmpeg.standardOutput = FileHandle.nullDevice
            try ChildProcesses.run(ffmpeg)
            defer { ChildProcesses.terminate(ffmpeg) }
            // 10 s of a real-time stream: a generous bound for a machine three times slower.
            try await waitFor("ffmpeg to finish", seconds: 90) { !ffmpeg.isRunning }
            let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(ffmpeg.terminationStatus == 0, "\(errorText)")
            #expect(errorText.isEmpty, "ffmpeg reported: \(errorText)")
            // 16-bit stereo at 44.1 kHz: 10 s is 1 764 000 bytes of samples after the WAV header.
            let size = try FileManager.default.attributesOfItem(atPath: wav.path)[.size] as? Int ?? 0
            #expect(size >= 1_764_000)
            #expect(try await serve.terminate() == 0)
        }
    }

    @Test("serve: 200 listeners all get the stream, one stalled listener delays none of them by more than the burst, memory stays bounded")
    func manyListeners() async throws {
        try await withStation(Self.realtime()) { station in
            let serve = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0", "--max-listeners", "300"])
            let port = try await serve.listeningPort()
            let first = try await RelayTestListener.connect(port: port, keepsBody: false)
            try await waitFor("the first listener's burst", diagnosis: { await Self.diagnosis(port, serve, [first]) }) { first.bodyCount > 16_000 }
            let residentBefore = serve.residentKilobytes()

            let stalled = try await RelayTestListener.connect(port: port, stalled: true)
            var listeners: [RelayTestListener] = []
            for _ in 0..<200 { listeners.append(try await RelayTestListener.connect(port: port, keepsBody: false)) }
            try await waitFor("all 200 listeners to get audio", diagnosis: { await Self.diagnosis(port, serve, listeners.filter { $0.bodyCount == 0 }) }) {
                listeners.allSatisfy { $0.bodyCount > 0 }
            }

            // From now on every listener must get what upstream sends, short of at most the burst.
            let burstBytes = 2 * 16_000
            let upstreamBefore = try await Self.status(port)["audioBytesReceived"] as? Int ?? 0
            let countsBefore = listeners.map(\.bodyCount)
            let residentDuring = serve.residentKilobytes()
            var upstreamAfter = upstreamBefore
            try await waitFor("two bursts' worth of new audio") {
                upstreamAfter = (try? await Self.status(port)["audioBytesReceived"] as? Int) ?? upstreamBefore
                return upstreamAfter - upstreamBefore > 2 * burstBytes
            }
            let gained = zip(listeners, countsBefore).map { $0.bodyCount - $1 }
            let worst = gained.min() ?? 0
            // What the closed listeners saw and serve's log (a line for each listener that left,
            // with why), so a failure says who closed.
            let closed = listeners.filter(\.isClosed)
            let why = "closed: \(closed.prefix(3).map(\.diagnosis)); serve said: \(serve.stderr.suffix(4000))"
            #expect(worst >= upstreamAfter - upstreamBefore - burstBytes,
                    "a listener gained \(worst) of \(upstreamAfter - upstreamBefore) bytes; \(closed.count) \(why)")
            #expect(closed.isEmpty, "\(closed.count) \(why)")
            // The stalled listener may already be gone: it is dropped after the 10 s stall timeout,
            // which a slow (sanitizer) build reaches while the 200 connect. Every other one must be there.
            let finalStatus = try await Self.status(port)
            let listening = finalStatus["listeners"] as? Int ?? -1
            let droppedAsStalled = finalStatus["stalledDisconnects"] as? Int ?? -1
            #expect(droppedAsStalled == 0 || droppedAsStalled == 1, "\(droppedAsStalled) stalled disconnects")
            #expect(listening + droppedAsStalled == 202, "\(listening) listeners, \(droppedAsStalled) dropped as stalled; \(closed.count) \(why)")

            let residentAfter = serve.residentKilobytes()
            print("relay RSS: \(residentBefore) kB with 1 listener, \(residentDuring) kB with 202, \(residentAfter) kB \(upstreamAfter - upstreamBefore) bytes later")
            #expect(residentAfter - residentBefore < 48 * 1024, "RSS grew from \(residentBefore) kB to \(residentAfter) kB")
            #expect(residentAfter - residentDuring < 8 * 1024, "RSS kept growing: \(residentDuring) kB to \(residentAfter) kB")

            for listener in listeners { await listener.close() }
            await stalled.close()
            await first.close()
            #expect(try await serve.terminate() == 0)
        }
    }

    @Test("serve: an upstream reconnect whose burst repeats audio reaches listeners spliced: every frame once, in order")
    func reconnectSpliced() async throws {
        // Connection 1 sends frames 0..<40 and drops; connection 2 (an Icecast-style burst)
        // starts back at frame 30 and then stays open. Frames 30..<40 must not be heard twice.
        let connections = Locked(0)
        let server = try await ScriptedServer.start { _ in
            let number = connections.withLock { value -> Int in
                value += 1
                return value
            }
            let head = HostileStreamTests.head(metaint: nil)
            if number == 1 {
                return [.send(head), .wait(seconds: 1), .send(HostileStreamTests.frames(0..<40)), .wait(seconds: 0.2), .close]
            }
            // Frame 80 is there so the framer sees where frame 79 ends; it is passed on only at the next header.
            // Then open until serve goes: a close on a timer could come before a starved machine
            // delivered the stream, and be a third connection.
            return [.send(head), .send(HostileStreamTests.frames(30..<81)), .hang]
        }
        defer { Task { try? await server.stop() } }
        let serve = try AirtapChild(["serve", server.url("/"), "--listen", "127.0.0.1:0", "--retries", "2", "--log-level", "notice",
                                     "--burst", "10s", "--stall-timeout", "15m"])
        let port = try await serve.listeningPort()
        // Its burst (10 s) is the whole stream so far (2 s), however late a loaded machine connects it.
        let listener = try await RelayTestListener.connect(port: port)
        let expected = HostileStreamTests.frames(0..<80)
        do {
            try await waitFor("the spliced stream", seconds: 60) { listener.bodyCount >= expected.count }
        } catch {
            Issue.record("\(listener.bodyCount) of \(expected.count) bytes; \(await Self.diagnosis(port, serve, [listener]))")
            throw error
        }
        // A round trip to serve before the last look: anything it still had queued for the
        // listener (a frame heard twice would be) has gone out by the time /status answers.
        #expect(try await Self.status(port)["upstream"] as? String == "streaming")
        #expect(listener.received.body == expected)
        #expect(connections.withLock { $0 } == 2)
        await listener.close()
        #expect(try await serve.terminate() == 0)
        #expect(serve.stderr.contains("reconnected seamlessly"), "\(serve.stderr)")
    }

    @Test("serve: a first connection that fails (404) exits 2 with one line, without retrying")
    func firstConnectionFails() async throws {
        let connections = Locked(0)
        let server = try await ScriptedServer.start { _ in
            connections.withLock { $0 += 1 }
            return [.send(ScriptedServer.head("HTTP/1.0 404 File Not Found", ["Content-Type: text/html"])), .close]
        }
        defer { Task { try? await server.stop() } }
        let serve = try AirtapChild(["serve", server.url("/gone"), "--listen", "127.0.0.1:0"])
        #expect(try await serve.waitForExit() == 2)
        #expect(connections.withLock { $0 } == 1)
        let errors = serve.stderr.split(separator: "\n")
        #expect(errors.count == 1 && errors.first?.hasPrefix("airtap: ") == true, "\(serve.stderr)")
        #expect(serve.stderr.contains("404"))
    }

    /// What a failed wait prints: serve's /status, its stderr and each listener's connection.
    static func diagnosis(_ port: Int, _ serve: AirtapChild, _ listeners: [RelayTestListener]) async -> String {
        let status = (try? await StationClient.fetch(port: port, path: "/status")).map { String(decoding: $0.body, as: UTF8.self) }
        return "status \(status ?? "unanswered"); serve said: \(serve.stderr); listeners: "
            + listeners.prefix(5).map(\.diagnosis).joined(separator: "; ")
    }

    static func status(_ port: Int) async throws -> [String: Any] {
        let response = try await StationClient.fetch(port: port, path: "/status")
        return try #require(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test("serve --max-listeners 2: the third listener gets 503; status and playlists answer; the two go on")
    func maxListeners() async throws {
        try await withStation(Self.realtime()) { station in
            let serve = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0", "--max-listeners", "2"])
            let port = try await serve.listeningPort()
            let one = try await RelayTestListener.connect(port: port, keepsBody: false)
            let two = try await RelayTestListener.connect(port: port, metadata: true, keepsBody: false)
            try await waitFor("two listeners streaming", diagnosis: { await Self.diagnosis(port, serve, [one, two]) }) { one.bodyCount > 0 && two.bodyCount > 0 }

            let third = try await StationClient.fetch(port: port, path: "/stream")
            #expect(third.status == 503)
            #expect(String(decoding: third.body, as: UTF8.self).contains("2 listeners"))

            let status = try await Self.status(port)
            #expect(status["listeners"] as? Int == 2)
            #expect(status["station"] is String)
            #expect(status["upstream"] as? String == "streaming")
            #expect(status["title"] as? String != nil)
            #expect((status["bytesRelayed"] as? Int ?? 0) > 0)
            #expect(status["uptimeSeconds"] != nil)

            let pls = try await StationClient.fetch(port: port, path: "/listen.pls")
            #expect(pls.status == 200 && pls.header("Content-Type") == "audio/x-scpls")
            #expect(String(decoding: pls.body, as: UTF8.self).contains("File1=http://127.0.0.1:\(port)/stream"))
            let m3u = try await StationClient.fetch(port: port, path: "/listen.m3u")
            #expect(String(decoding: m3u.body, as: UTF8.self).contains("\nhttp://127.0.0.1:\(port)/stream\n"))

            let before = (one.bodyCount, two.bodyCount)
            try await waitFor("both listeners to go on") { one.bodyCount > before.0 && two.bodyCount > before.1 }
            await one.close()
            // A place freed is a place taken.
            try await waitFor("the first listener to be gone") { (try? await Self.status(port)["listeners"] as? Int) == 1 }
            let again = try await StationClient.fetch(port: port, path: "/stream", maxBodyBytes: 1000)
            #expect(again.status == 200)
            await two.close()
            #expect(try await serve.terminate() == 0)
        }
    }

    @Test("relay --to - into a reader that quits early: exit 0, nothing on stderr")
    func relayToClosedPipe() async throws {
        try await withStation(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .fast)) { station in
            let pipe = ChildProcesses.pipe()
            let relay = try AirtapChild(["relay", station.streamURL, "--to", "-"], stdout: pipe)
            let reader = pipe.fileHandleForReading
            var received = Data()
            while received.count < 50_000, let data = try reader.read(upToCount: 16_384), !data.isEmpty { received += data }
            try reader.close()
            // The frames start at once: no head, no metadata, no tag.
            #expect(MP3FrameHeader([UInt8](received.prefix(4))) != nil)
            #expect(Array(received) == station.program.audio(from: 0, count: received.count))
            let status = try await relay.waitForExit()
            #expect(status == 0)
            #expect(relay.stderr.isEmpty, "\(relay.stderr)")
        }
    }

    @Test("relay --to FILE: the station's frames in one file, and a cue sheet beside it")
    func relayToFile() async throws {
        try await withStation(StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .fast, maxSeconds: 10)) { station in
            let folder = try AirtapBinary.temporaryFolder()
            let path = folder.appendingPathComponent("show.mp3").path
            let result = try await AirtapBinary.run(["relay", station.streamURL, "--to", path])
            #expect(result.status == 0, "\(result.stderr)")
            let contents = try RecordedFileContents(path: path)
            let sent = station.program.audioByteCount(from: 0, seconds: 10)
            #expect(contents.audio == station.program.audio(from: 0, count: sent))
            let cue = try String(contentsOfFile: path + ".cue", encoding: .utf8)
            #expect(cue.contains("FILE \"show.mp3\" MP3"))
            let announced = StationTransmission.render(program: station.program, metaint: 8000, audioCount: sent,
                                                       streamURL: station.streamURL).titles
            #expect(cue.components(separatedBy: "INDEX 01").count - 1 == announced.count)
        }
    }
}
