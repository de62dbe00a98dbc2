import AirtapKit
import AirtapTestSupport
import Foundation
import TestStation
import Testing

/// `probe` on AAC: what the decoder makes of the stream (profile, core and output rate, channels)
/// and the average bitrate over everything received, not one frame's.
@Suite("probe: AAC and the average bitrate")
struct ProbeAACTests {
    @Test("probe on LC 44.1 kHz stereo and on LC 22.05 kHz mono (FAAD2: 44.1 kHz, two channels): the decoded line, and the average bitrate of the bytes sent",
          arguments: [(44100, 2, 96), (22050, 1, 48)])
    func aac(sampleRate: Int, channels: Int, bitrate: Int) async throws {
        var configuration = StationConfiguration(bitrate: bitrate, sampleRate: sampleRate, channels: channels,
                                                 trackSeconds: 2, gapSeconds: 1, maxSeconds: 4)
        configuration.codec = .aac
        let server = try await TestStationServer.start(configuration)
        defer { Task { try? await server.stop() } }
        let result = try await AirtapBinary.run(["probe", server.streamURL, "--for", "30s", "--retries", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdoutLines
        #expect(lines.contains("codec     AAC, \(sampleRate) Hz, \(channels == 1 ? "mono" : "stereo")"), "\(lines)")
        let decoded = sampleRate == 44100 ? "AAC LC, 44100 Hz, stereo" : "AAC LC, core 22050 Hz, output 44100 Hz, stereo"
        #expect(lines.contains("decoded   \(decoded)"), "\(lines)")
        // The average of what was sent: bytes over the frames' playing time.
        let program = server.program
        let bytes = program.audioByteCount(from: 0, seconds: 4)
        let seconds = Double(program.frameIndex(atOrAfter: bytes) * program.samplesPerFrame) / Double(sampleRate)
        let kbps = Int((Double(bytes) * 8 / seconds / 1000).rounded())
        #expect(lines.contains { $0.hasPrefix("average   \(kbps) kbps over ") }, "\(lines), expected \(kbps) kbps")
    }

    @Test("probe --json on AAC: a decoded record and a bitrate record")
    func json() async throws {
        var configuration = StationConfiguration(bitrate: 64, sampleRate: 22050, trackSeconds: 2, maxSeconds: 2)
        configuration.codec = .aac
        let server = try await TestStationServer.start(configuration)
        defer { Task { try? await server.stop() } }
        let result = try await AirtapBinary.run(["probe", server.streamURL, "--for", "30s", "--retries", "0", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines.contains { $0.contains("\"event\":\"decoded\"") && $0.contains("\"core_sample_rate_hz\":22050")
            && $0.contains("\"sample_rate_hz\":44100") && $0.contains("\"profile\":\"AAC LC\"") }, "\(result.stdoutLines)")
        #expect(result.stdoutLines.contains { $0.contains("\"event\":\"bitrate\"") && $0.contains("\"average_kbps\":") })
    }
}
