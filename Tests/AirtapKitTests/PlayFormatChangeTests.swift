import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// `play` across an AAC format change at `#EXT-X-DISCONTINUITY`: a programme of 44.1 kHz stereo,
/// an ad of 22.05 kHz mono, the programme again, each written by ffmpeg's HLS muxer.
@Suite("Play: AAC format change at an HLS discontinuity")
struct PlayFormatChangeTests {
    /// The three parts: (playlist prefix, tone, sample rate, channels).
    static let parts = [("p", 440, 44100, 2), ("a", 880, 22050, 1)]
    static let partSeconds = 4.0

    /// ffmpeg's HLS of each part (2 s MPEG-TS segments), and its ADTS frame count.
    static let hls = SharedValue<(folder: URL, frames: [String: Int])> {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-format-change-\(getpid())")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var frames: [String: Int] = [:]
        for (name, tone, rate, channels) in parts {
            try run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f", "lavfi",
                                        "-i", "sine=frequency=\(tone):duration=\(Int(partSeconds)):sample_rate=\(rate)",
                                        "-ac", "\(channels)", "-c:a", "aac", "-b:a", channels == 1 ? "32k" : "96k",
                                        "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod",
                                        "-hls_segment_filename", "\(name)%d.ts", "\(name).m3u8"], in: folder)
            let count = try run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a", "-count_packets",
                                                     "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", "\(name).m3u8"], in: folder)
            frames[name] = count.split(separator: "\n").first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        }
        return (folder, frames)
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String], in folder: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.currentDirectoryURL = folder
        let output = ChildProcesses.pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.spawn(process)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        return String(decoding: data, as: UTF8.self)
    }

    /// programme, ad, programme: one VOD playlist with a discontinuity at each change.
    static func playlist(folder: URL) throws -> String {
        func entries(_ name: String) throws -> [String] {
            try String(contentsOf: folder.appendingPathComponent("\(name).m3u8"), encoding: .utf8)
                .split(separator: "\n").map(String.init).filter { $0.hasPrefix("#EXTINF:") || $0.hasSuffix(".ts") }
        }
        let programme = try entries("p"), ad = try entries("a")
        let lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:3", "#EXT-X-PLAYLIST-TYPE:VOD"]
            + programme + ["#EXT-X-DISCONTINUITY"] + ad + ["#EXT-X-DISCONTINUITY"] + programme + ["#EXT-X-ENDLIST"]
        return lines.joined(separator: "\n") + "\n"
    }

    @Test("Every frame of the ad is heard (FAAD2 doubles 22.05 kHz: 2048 frames out per packet) at its pitch, and the programme comes back on time")
    func adAtDiscontinuity() async throws {
        let (folder, frames) = try await Self.hls.value
        let playlist = Array(try Self.playlist(folder: folder).utf8)
        try await HLSStationTests.withScripted({ path in
            if path == "/show.m3u8" { return (200, "application/vnd.apple.mpegurl", playlist) }
            let name = String(path.dropFirst())
            guard name.hasSuffix(".ts"), !name.contains("/"), let data = try? Data(contentsOf: folder.appendingPathComponent(name)) else { return nil }
            return (200, "video/mp2t", [UInt8](data))
        }) { server, _ in
            let wav = try PlayTests.wavPath()
            let result = try await AirtapBinary.run(["play", server.url("/show.m3u8"), "--device", "file:'\(wav)',wav",
                                                     "--buffer", "0.5s", "--retries", "0"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!result.stderr.contains("restarting the decoder"), "\(result.stderr)")
            let audio = try WAVAudio(path: wav)
            #expect(audio.sampleRate == 44100, "\(audio.sampleRate)")
            let programme = (frames["p"] ?? 0) * 1024, ad = (frames["a"] ?? 0) * 2048
            #expect(programme > 0 && ad > 0)
            // One frame's worth either way: a decoder opened afresh may owe its priming frame.
            #expect(abs(audio.frameCount - (2 * programme + ad)) <= 2048, "\(audio.frameCount) frames, expected \(2 * programme + ad)")
            let second = audio.sampleRate
            try #require(audio.frameCount > 2 * programme + ad - second / 4, "too short to measure")
            let adRange = (programme + second / 4)..<(programme + ad - second / 4)
            let backRange = (programme + ad + second / 4)..<(2 * programme + ad - second / 4)
            #expect(abs(audio.frequency(frames: adRange) - 880) < 18, "the ad at its pitch: \(audio.frequency(frames: adRange)) Hz")
            #expect(abs(audio.frequency(frames: backRange) - 440) < 9, "the programme on time: \(audio.frequency(frames: backRange)) Hz")
        }
    }
}
