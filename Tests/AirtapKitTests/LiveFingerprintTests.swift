import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import AudioFingerprinting
import Foundation
import ICYWire
import Logging
import RecordingRules
import TestStation
import Testing

/// With the library on, a recorded track's fingerprint and its loudness come from one decode of
/// its packets as they are written: the fingerprint must be the one a scan of the finished file
/// computes, or `--dedupe` would not find a recorded song again in a scanned collection.
@Suite("Library: fingerprints from the live decode match a scan of the file")
struct LiveFingerprintTests {
    @Test("Each track's live fingerprint is the file's (bit for bit), and its ReplayGain is within 0.3 dB of ffmpeg's ebur128",
          arguments: [StationCodec.mp3, .aac, .vorbis, .opus])
    func liveMatchesScan(codec: StationCodec) async throws {
        try await Self.check(ReplayGainTagTests.configuration(codec))
    }

    @Test("A track longer than the fingerprint's two minutes: its fingerprint is made when they are in, and is still the file's")
    func longTrack() async throws {
        let configuration = StationConfiguration(metaint: 16_000, bitrate: 64, trackSeconds: 125, pace: .fast,
                                                 titles: ReplayGainTagTests.titles, maxSeconds: 3 * 125 + 5)
        try await Self.check(configuration)
    }

    static func check(_ configuration: StationConfiguration) async throws {
        let server = try await TestStationServer.start(configuration)
        defer { Task { try? await server.stop() } }
        let indexFolder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: indexFolder) }
        let indexPath = indexFolder.appendingPathComponent("library.sqlite").path
        let library = TrackLibrary(index: try LibraryIndex(path: indexPath), dedupe: false, logger: Logger(label: "test"))
        let (_, folder, finished) = try await RecordTests.record(server) { path in
            var options = ReplayGainTagTests.measuring(path)
            options.library = library
            return options
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        let tracks = finished.all.filter(\.isComplete)
        #expect(tracks.count >= 2)
        for track in tracks {
            // What `library scan` computes for the same file: the same values, so `--dedupe`
            // finds one where it finds the other.
            let scanned = try AudioFileFingerprint.read(path: track.path, wholeFile: true)
            // As reported when the file was written: the fingerprint of the live audio.
            let fingerprint = try #require(track.fingerprint, "\(track.path): no live fingerprint")
            #expect(!fingerprint.values.isEmpty)
            #expect(fingerprint == scanned.fingerprint, "\(track.path): \(fingerprint.values.count) values live, \(scanned.fingerprint.values.count) scanned")
            // The loudness read the same samples.
            let gain = try #require(track.replayGain, "\(track.path)")
            let measured = try await ReplayGainTagTests.ffmpegLoudness(track.path)
            #expect(abs(gain.integratedLoudness - measured.integrated) <= 0.3, "\(gain.integratedLoudness) vs \(measured.integrated) LUFS")
        }
        // And the index holds it: a track's entry has a fingerprint.
        let index = try LibraryIndex(path: indexPath)
        #expect(try tracks.allSatisfy { try index.entry(path: $0.path)?.storedFingerprintValues ?? 0 > 0 })
    }
}
