import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// The test station streaming chained Ogg (a link per title, encoded with ffmpeg at start-up),
/// recorded and probed by the airtap binary.
@Suite("Ogg Vorbis and Opus stations")
struct OggStationTests {
    static let titles = ["Erste – Ä", "Second & Co", "Третий"]

    static func configuration(_ codec: StationCodec) -> StationConfiguration {
        // The loop is 6 s; a connection gets 7 s of it: the first link again, cut short.
        var configuration = StationConfiguration(trackSeconds: 2, pace: .fast, titles: titles, maxSeconds: 7)
        configuration.codec = codec
        return configuration
    }

    /// A station encoding its own Ogg program (withStation would hand it the shared MP3 one).
    static func withOggStation(_ codec: StationCodec, _ body: (TestStationServer) async throws -> Void) async throws {
        let server = try await TestStationServer.start(configuration(codec))
        do {
            try await body(server)
            try await server.stop()
        } catch {
            try? await server.stop()
            throw error
        }
    }

    /// ffprobe's duration and title of a file, and whether ffmpeg decodes it without a word on stderr.
    static func inspect(_ path: String) async throws -> (seconds: Double, title: String?, album: String?, track: String?, decodesCleanly: Bool) {
        try await onOwnThread {
            func run(_ tool: String, _ arguments: [String]) throws -> (out: String, err: String) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: tool)
                process.arguments = arguments
                let out = ChildProcesses.pipe(), err = ChildProcesses.pipe()
                process.standardOutput = out
                process.standardError = err
                process.standardInput = FileHandle.nullDevice
                try ChildProcesses.spawn(process)
                let outData = out.fileHandleForReading.readDataToEndOfFile()
                let errData = err.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return (String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
            }
            let probe = try run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration:format_tags=title,album,track:stream_tags=title,album,track",
                                                     "-of", "default=noprint_wrappers=1", path])
            var seconds = 0.0
            var title: String?, album: String?, track: String?
            for line in probe.out.split(separator: "\n") {
                if line.hasPrefix("duration=") { seconds = Double(line.dropFirst(9)) ?? 0 }
                if line.uppercased().hasPrefix("TAG:TITLE=") { title = String(line.dropFirst(10)) }
                if line.uppercased().hasPrefix("TAG:ALBUM=") { album = String(line.dropFirst(10)) }
                if line.uppercased().hasPrefix("TAG:TRACK=") { track = String(line.dropFirst(10)) }
            }
            let decode = try run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "null", "-"])
            return (seconds, title, album, track, decode.err.isEmpty && probe.err.isEmpty)
        }
    }

    @Test("record: one file per link, starting with its headers, named from its comments; the first and the cut one in incomplete/",
          arguments: [StationCodec.vorbis, .opus])
    func record(codec: StationCodec) async throws {
        try await Self.withOggStation(codec) { server in
            let folder = try AirtapBinary.temporaryFolder()
            let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", folder.path])
            #expect(result.status == 0, "\(result.stderr)")
            let files = filesBelow(folder).filter { $0.hasSuffix(".\(codec == .opus ? "opus" : "ogg")") }.sorted()
            let complete = files.filter { !$0.contains("incomplete/") }
            let incomplete = files.filter { $0.contains("incomplete/") }
            let ext = codec == .opus ? "opus" : "ogg"
            #expect(complete.map { ($0 as NSString).lastPathComponent }.sorted() == ["Second & Co.\(ext)", "Третий.\(ext)"], "\(files)")
            #expect(incomplete.count == 2, "the first link (first of the connection) and the one the end cut: \(files)")
            for file in complete {
                let path = folder.appendingPathComponent(file).path
                let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
                #expect(bytes.starts(with: Array("OggS".utf8)) && bytes[5] == 2, "\(file) starts with its BOS page")
                let found = try await Self.inspect(path)
                #expect(found.decodesCleanly, "\(file)")
                #expect(abs(found.seconds - 2) < 0.1, "\(file): \(found.seconds) s")
                #expect(found.title.map { file.hasSuffix("\($0).\(ext)") } == true, "\(file): title \(found.title ?? "none")")
                // The recorder's tags, written into the link's comment header (re-paginated).
                #expect(found.album == server.configuration.name, "the station (a bare URL: named by its icy-name): \(file)")
                #expect(found.track.flatMap { Int($0) } != nil, "\(file)")
            }

            // With --no-tags every page goes out as sent and lands in exactly one file: the files add up to the stream.
            let bare = try AirtapBinary.temporaryFolder()
            let untagged = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--no-tags", "--out", bare.path])
            #expect(untagged.status == 0, "\(untagged.stderr)")
            let total = try filesBelow(bare).filter { $0.hasSuffix(".\(ext)") }.reduce(0) { sum, file in
                sum + (try FileManager.default.attributesOfItem(atPath: bare.appendingPathComponent(file).path)[.size] as? Int ?? 0)
            }
            #expect(total == server.program.audioByteCount(from: 0, seconds: 7))
        }
    }

    @Test("probe: codec, rate, channels, bitrate, and each link's title at its time", arguments: [StationCodec.vorbis, .opus])
    func probe(codec: StationCodec) async throws {
        try await Self.withOggStation(codec) { server in
            let result = try await AirtapBinary.run(["probe", server.streamURL, "--for", "30"])
            #expect(result.status == 0, "\(result.stderr)")
            let rate = codec == .opus ? "48000 Hz" : "44100 Hz"
            #expect(result.stdout.contains("codec     \(codec == .opus ? "Opus" : "Vorbis")"), "\(result.stdout)")
            #expect(result.stdout.contains(rate) && result.stdout.contains("stereo"), "\(result.stdout)")
            for (index, title) in Self.titles.enumerated() {
                #expect(result.stdout.contains("[00:00:0\(index * 2).0] title: \(title)"), "\(result.stdout)")
            }
            #expect(!result.stdout.contains("metaint"))
        }
    }
}

extension OggStationTests {
    @Test("play: Vorbis at its own rate, Opus at 48 kHz; each link's tone at its pitch in the WAV capture, titles logged",
          arguments: [StationCodec.vorbis, .opus])
    func play(codec: StationCodec) async throws {
        try await Self.withOggStation(codec) { server in
            let wav = try AirtapBinary.temporaryFolder().appendingPathComponent("out.wav").path
            let result = try await AirtapBinary.run(["play", server.streamURL, "--device", "file:'\(wav)',wav",
                                               "--buffer", "0.5s", "--retries", "0"])
            #expect(result.status == 0, "\(result.stderr)")
            let audio = try WAVAudio(path: wav)
            let rate = codec == .opus ? 48000 : 44100
            #expect(audio.sampleRate == rate && audio.channels == 2)
            #expect(audio.frameCount >= 6 * rate, "the three 2 s links: \(audio.frameCount) frames")
            for index in 0..<3 {
                let middle = (index * 2 * rate + rate / 2)..<(index * 2 * rate + 3 * rate / 2)
                let expected = StationProgram.frequency(ofTrack: index)
                let found = audio.frequency(frames: middle)
                #expect(abs(found - expected) / expected < 0.02, "link \(index): \(found) Hz, expected \(expected)")
            }
            for title in Self.titles { #expect(result.stderr.contains("title: \(title)"), "\(result.stderr)") }
        }
    }
}

extension OggStationTests {
    /// ffmpeg reads `url` for `seconds` (asking for ICY metadata, as it does by default) into a WAV;
    /// returns what it said on stderr and the WAV's size.
    static func ffmpegDecodes(_ url: String, seconds: Int) async throws -> (errors: String, bytes: Int) {
        let wav = try AirtapBinary.temporaryFolder().appendingPathComponent("out.wav")
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-nostdin", "-v", "error", "-i", url, "-t", "\(seconds)", "-y", wav.path]
        let errors = ChildProcesses.pipe()
        ffmpeg.standardError = errors
        ffmpeg.standardOutput = FileHandle.nullDevice
        try ChildProcesses.run(ffmpeg)
        defer { ChildProcesses.terminate(ffmpeg) }
        try await waitFor("ffmpeg to finish", seconds: 60) { !ffmpeg.isRunning }
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let size = try FileManager.default.attributesOfItem(atPath: wav.path)[.size] as? Int ?? 0
        return (text, size)
    }

    @Test("serve: a listener joining mid-link gets the link's headers first and decodes cleanly; no ICY metadata inside Ogg",
          arguments: [StationCodec.vorbis, .opus])
    func serve(codec: StationCodec) async throws {
        var configuration = Self.configuration(codec)
        configuration.pace = .realtime
        configuration.maxSeconds = nil
        let station = try await TestStationServer.start(configuration)
        defer { Task { try? await station.stop() } }
        // No burst: a late listener starts at the live edge, inside the link, not at its headers.
        let serve = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0", "--burst", "0.1s"])
        let port = try await serve.listeningPort()
        func text(_ path: String) async throws -> String {
            String(decoding: try await StationClient.fetch(port: port, path: path, headers: [], timeout: .seconds(30)).body, as: UTF8.self)
        }
        try await waitFor("the second link", seconds: 60, every: .milliseconds(100)) { try await text("/status-json.xsl").contains("Second") }
        // Let the second link run on (40 kB past its title, over a second of audio): a listener
        // now starts inside it, after its header pages.
        func receivedBytes() async throws -> Double {
            let line = try await text("/metrics").split(separator: "\n").first { $0.hasPrefix("airtap_audio_bytes_received_total{") }
            return line.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } } ?? 0
        }
        let atSecondTitle = try await receivedBytes()
        try await waitFor("audio well into the second link", every: .milliseconds(100)) { try await receivedBytes() > atSecondTitle + 40_000 }
        let late = try await Self.ffmpegDecodes("http://127.0.0.1:\(port)/stream", seconds: 3)
        #expect(late.errors.isEmpty, "ffmpeg reported: \(late.errors)")
        let rate = codec == .opus ? 48000 : 44100
        #expect(late.bytes >= 2 * rate * 4, "at least 2 s of decoded audio: \(late.bytes) bytes")
        #expect(try await serve.terminate() == 0)
    }
}

extension OggStationTests {
    @Test("relay --to FILE: one chained Ogg file of every page, which ffmpeg decodes cleanly, with a cue sheet of the links' titles",
          arguments: [StationCodec.vorbis, .opus])
    func relayToFile(codec: StationCodec) async throws {
        // 5 s: into the third link, not round the loop (the loop's links would repeat their serial
        // numbers, which a chained file must not).
        var configuration = Self.configuration(codec)
        configuration.maxSeconds = 5
        let server = try await TestStationServer.start(configuration)
        defer { Task { try? await server.stop() } }
        do {
            let folder = try AirtapBinary.temporaryFolder()
            let file = folder.appendingPathComponent(codec == .opus ? "show.opus" : "show.ogg").path
            let result = try await AirtapBinary.run(["relay", server.streamURL, "--to", file, "--retries", "0"])
            #expect(result.status == 0, "\(result.stderr)")
            let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0
            #expect(size == server.program.audioByteCount(from: 0, seconds: 5), "every page, nothing else")
            let found = try await Self.inspect(file)
            #expect(found.decodesCleanly)
            let cue = (try? String(contentsOfFile: file + ".cue", encoding: .utf8)) ?? ""
            // One track per link at its exact time ("Erste – Ä" reads as artist – title, like an ICY title).
            for expected in ["TITLE \"Ä\"", "TITLE \"Second & Co\"", "TITLE \"Третий\"", "INDEX 01 00:02:00", "INDEX 01 00:04:00"] {
                #expect(cue.contains(expected), "\(cue)")
            }
        }
    }
}
