import AirtapTestSupport
import Foundation
import ICYWire
@testable import TestStation
import Testing

/// airtap against a real Icecast2 whose source is ffmpeg sending AAC: the tracks encoded with
/// ffmpeg's `aac` encoder to ADTS, sent with `-f adts` as audio/aac, titles set through the admin
/// API as the source reaches each track. `record` and `play` listen at once.
@Suite("Real Icecast2: AAC")
struct IcecastAACTests {
    static let titles = ["Lead-In - Warm Up", "Ünïcödé Tönes - Sœur's Song; Part=2", "Outro - Last Call"]

    @Test("record writes tagged .aac files split at each title; play plays the AAC at its pitch with the titles",
          .enabled(if: IcecastServer.isAvailable, "icecast2 or ffmpeg is not installed (tools/install-deps installs both)"),
          .waitingForChildren)
    func recordAndPlay() async throws {
        var leadInConfiguration = StationConfiguration(bitrate: 96, trackSeconds: 4.5, titles: [Self.titles[0]])
        leadInConfiguration.codec = .aac
        var configuration = StationConfiguration(bitrate: 96, trackSeconds: 3, titles: Self.titles)
        configuration.codec = .aac
        let leadIn = try await StationProgram.encoding(leadInConfiguration)
        let program = try await StationProgram.encoding(configuration)
        var sent = leadIn.tracks[0].bytes
        var boundaries = [0]
        for track in program.tracks.dropFirst() {
            boundaries.append(sent.count)
            sent += track.bytes
        }
        // The last track twice over, so the player's last second is well inside it.
        sent += program.tracks[program.tracks.count - 1].bytes
        let work = try AirtapBinary.temporaryFolder()

        let server = try await IcecastServer.start()
        var source: IcecastSource?
        var children: [Process] = []
        defer {
            for child in children { ChildProcesses.terminate(child) }
            source?.stop()
            server.stop()
            try? FileManager.default.removeItem(at: work)
        }
        // Fed track by track, each title before the rest of its track (see TrackFeed).
        let feed = TrackFeed(bytes: sent, boundaries: boundaries)
        let ffmpeg = try IcecastSource(feeding: server, name: "Icecast AAC FM", adts: true, bytesPerSecond: 96_000 / 8)
        source = ffmpeg
        ffmpeg.feed(feed.piece(0))
        var mountPatience = Patience(seconds: 120)
        while await !server.mountIsLive() {
            guard !mountPatience.isSpent(), ffmpeg.process.isRunning else {
                Issue.record("the source never came up on \(IcecastServer.mount): \(server.errorLog)")
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await server.updateTitle(Self.titles[0])
        try await ffmpeg.waitUntilSent(boundaries[1] / 3)

        let output = work.appendingPathComponent("recordings")
        let wav = work.appendingPathComponent("play.wav").path
        // The source waits for this task between its pieces (see TrackFeed), and Icecast sends
        // nothing meanwhile: a task pool CPU-bound tests hold for tens of seconds would make that
        // a stall at the default 15 s. Stalls are not under test here.
        let record = try ChildProcesses.startAirtap([
            "record", server.streamURL, "--out", output.path, "--retries", "0", "--log-level", "info", "--stall-timeout", "10m",
        ], in: work, name: "record")
        children.append(record)
        let play = try ChildProcesses.startAirtap([
            "play", server.streamURL, "--device", "file:'\(wav)',wav", "--buffer", "0.5s", "--retries", "0", "--stall-timeout", "10m",
        ], in: work, name: "play")
        children.append(play)
        // Both listen before the second title is set, however long a loaded machine takes to start
        // them: the track between the second and third titles is then whole in the recording.
        try await waitFor("record and play connected to the mount") {
            [work.appendingPathComponent("record.err"), work.appendingPathComponent("play.err")].allSatisfy { log in
                ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("streaming")
            }
        }

        for index in 1..<Self.titles.count {
            try await ffmpeg.waitUntilSent(boundaries[index])
            try await server.updateTitle(Self.titles[index])
            ffmpeg.feed(feed.piece(index))
        }
        ffmpeg.finish()
        let sourceEnded = await ChildProcesses.waitForExit(ffmpeg.process, timeout: .seconds(120))
        try #require(sourceEnded, "ffmpeg did not finish the file")
        let recordEnded = await ChildProcesses.waitForExit(record, timeout: .seconds(120))
        let playEnded = await ChildProcesses.waitForExit(play, timeout: .seconds(120))
        let recordLog = (try? String(contentsOf: work.appendingPathComponent("record.err"), encoding: .utf8)) ?? ""
        let playLog = (try? String(contentsOf: work.appendingPathComponent("play.err"), encoding: .utf8)) ?? ""
        try #require(recordEnded && playEnded, "record: \(recordLog)\nplay: \(playLog)")
        #expect(record.terminationStatus == 0, "\(recordLog)")
        #expect(play.terminationStatus == 0, "\(playLog)")

        // The complete track between two titles: an .aac file named from its title, an ID3v2 tag,
        // then nothing but ADTS frames, about the track's length.
        let files = filesBelow(output)
        let complete = try #require(files.first { $0.hasSuffix("Ünïcödé Tönes - Sœur's Song; Part=2.aac") && !$0.contains("incomplete/") },
                                    "\(files)\n\(recordLog)")
        let contents = try RecordedFileContents(path: output.appendingPathComponent(complete).path)
        #expect(contents.tag?.title == "Sœur's Song; Part=2")
        let seconds = Double(contents.frames.count * 1024) / 44100
        // The cuts sit where Icecast delivered each title (within TrackFeed.lead bytes and a
        // metadata interval of the track's start) or in a silence near it: this checks the length.
        #expect(abs(seconds - program.tracks[1].seconds) < 1.5, "\(seconds) s recorded, \(program.tracks[1].seconds) s sent")
        #expect(files.filter { !$0.hasSuffix(".lock") }.allSatisfy { $0.hasSuffix(".aac") }, "\(files)")

        // Played at the decoder's rate, the last track's tone at its pitch, its title shown.
        let audio = try WAVAudio(path: wav)
        #expect(audio.sampleRate == 44100 && audio.channels == 2)
        let end = audio.frameCount - audio.sampleRate / 2
        try #require(end > audio.sampleRate * 2, "only \(audio.frameCount) frames played")
        let measured = audio.frequency(frames: (end - audio.sampleRate)..<end)
        let expected = program.tracks[2].frequency
        #expect(abs(measured - expected) / expected < 0.02, "\(measured) Hz, expected \(expected) Hz")
        #expect(playLog.contains("title: \(Self.titles[2])"), "\(playLog)")
    }
}
