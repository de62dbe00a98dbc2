import AirtapKit
import AirtapRecording
import AirtapTestSupport
import Foundation
import ICYWire
import RecordingRules
import TestStation
import Testing

/// ReplayGain tags on recorded tracks, checked against ffmpeg's own EBU R128 measurement of the
/// very files (its decoders, its ebur128 filter) and read back by ffprobe as players read them.
@Suite("Recording: ReplayGain tags from EBU R128 loudness")
struct ReplayGainTagTests {
    static let titles = ["Airtap Test Tones - A440", "Loud Tones - B", "Guns N' Roses - Sweet Child o' Mine"]

    static func configuration(_ codec: StationCodec) -> StationConfiguration {
        var configuration = StationConfiguration(metaint: 4000, bitrate: 96, trackSeconds: 3, pace: .fast, titles: titles,
                                                 maxSeconds: 11)
        configuration.codec = codec
        return configuration
    }

    /// A recording that measures loudness, as the library (or `--replaygain`) turns it on.
    static func measuring(_ path: String) -> RecordingOptions {
        var options = RecordingOptions(outputDirectory: path)
        options.measuresLoudness = true
        return options
    }

    /// What ffmpeg's ebur128 filter says of a file: integrated loudness (LUFS) and sample peak (dBFS).
    static func ffmpegLoudness(_ path: String) async throws -> (integrated: Double, peakDB: Double) {
        let output = try await toolOutput("/usr/bin/ffmpeg", ["-hide_banner", "-nostats", "-i", path, "-af", "ebur128=peak=sample",
                                                  "-f", "null", "-"], readingErrors: true)
        // The summary at the end: "I:         -19.6 LUFS" and, under "Sample peak:", "Peak:      -3.0 dBFS".
        guard let summary = output.range(of: "Summary:") else { throw Unreadable(text: output) }
        let lines = output[summary.upperBound...].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        func value(_ prefix: String) throws -> Double {
            guard let line = lines.first(where: { $0.hasPrefix(prefix) }),
                  let number = line.dropFirst(prefix.count).split(separator: " ").first.flatMap({ Double($0) }) else {
                throw Unreadable(text: output)
            }
            return number
        }
        return (try value("I:"), try value("Peak:"))
    }

    /// The tags ffprobe reads from a file, key (lowercased) to value.
    static func ffprobeTags(_ path: String, streams: Bool = false) async throws -> [String: String] {
        // Ogg comments are the stream's tags to ffprobe; ID3 tags the format's.
        let output = try await toolOutput("/usr/bin/ffprobe", ["-hide_banner", "-loglevel", "error", "-show_entries",
                                                   streams ? "stream_tags" : "format_tags",
                                                   "-of", "default=noprint_wrappers=1", path])
        var tags: [String: String] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("TAG:") {
            let pair = line.dropFirst(4).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { tags[pair[0].lowercased()] = String(pair[1]) }
        }
        return tags
    }

    @Test("MP3 and AAC: TXXX REPLAYGAIN_TRACK_GAIN and _PEAK within 0.3 dB of ffmpeg's ebur128 on the same file",
          arguments: [StationCodec.mp3, .aac])
    func id3Tags(codec: StationCodec) async throws {
        let server = try await TestStationServer.start(Self.configuration(codec))
        defer { Task { try? await server.stop() } }
        let (_, folder, finished) = try await RecordTests.record(server, options: Self.measuring)
        defer { try? FileManager.default.removeItem(at: folder) }
        let tracks = finished.all
        #expect(tracks.count >= 3)
        for track in tracks {
            let tags = try await Self.ffprobeTags(track.path)
            let measured = try await Self.ffmpegLoudness(track.path)
            let gainText = try #require(tags["replaygain_track_gain"], "\(track.path): \(tags)")
            let peakText = try #require(tags["replaygain_track_peak"], "\(track.path): \(tags)")
            #expect(gainText.hasSuffix(" dB") && gainText.split(separator: ".").last?.count == 5, "two decimals: \(gainText)")
            #expect(peakText.split(separator: ".").last?.count == 6, "six decimals: \(peakText)")
            let gain = try #require(Double(gainText.dropLast(3)))
            let peak = try #require(Double(peakText))
            #expect(abs(gain - (-18 - measured.integrated)) <= 0.3, "\(track.path): gain \(gain), ffmpeg I \(measured.integrated) LUFS")
            #expect(abs(20 * log10(peak) - measured.peakDB) <= 0.3, "\(track.path): peak \(peak), ffmpeg \(measured.peakDB) dBFS")
            // The recorder reports what it wrote.
            #expect(track.replayGain?.trackGainText == gainText)
            // The other tags are still there beside them.
            #expect(tags["album"] == "Tones FM")
        }
    }

    @Test("Ogg Vorbis: REPLAYGAIN_* comments; Ogg Opus: R128_TRACK_GAIN only; both within 0.3 dB of ffmpeg's ebur128",
          arguments: [StationCodec.vorbis, .opus])
    func oggComments(codec: StationCodec) async throws {
        let server = try await TestStationServer.start(Self.configuration(codec))
        defer { Task { try? await server.stop() } }
        let (_, folder, finished) = try await RecordTests.record(server, options: Self.measuring)
        defer { try? FileManager.default.removeItem(at: folder) }
        let tracks = finished.all.filter(\.isComplete)
        #expect(tracks.count >= 2)
        for track in tracks {
            let tags = try await Self.ffprobeTags(track.path, streams: true)
            let measured = try await Self.ffmpegLoudness(track.path)
            // The recorder's own comments are still there, and the audio still decodes (checked by ffmpeg above).
            #expect(tags["album"] == "Tones FM", "\(tags)")
            #expect(tags["title"] == track.info?.raw)
            if codec == .opus {
                #expect(tags["replaygain_track_gain"] == nil, "RFC 7845: no REPLAYGAIN_* in Opus")
                let r128 = try #require(tags["r128_track_gain"].flatMap { Int($0) }, "\(tags)")
                // The test station's OpusHead has no output gain, and ffmpeg applies it anyway.
                #expect(abs(Double(r128) / 256 - (-23 - measured.integrated)) <= 0.3, "\(r128) vs \(measured.integrated) LUFS")
            } else {
                let gainText = try #require(tags["replaygain_track_gain"], "\(tags)")
                let gain = try #require(Double(gainText.dropLast(3)))
                #expect(abs(gain - (-18 - measured.integrated)) <= 0.3, "\(gain) vs \(measured.integrated) LUFS")
                let peak = try #require(tags["replaygain_track_peak"].flatMap { Double($0) })
                #expect(abs(20 * log10(peak) - measured.peakDB) <= 0.3, "peak \(peak), ffmpeg \(measured.peakDB) dBFS")
            }
        }
    }

    @Test("With loudness measurement off (--no-replaygain) the other tags are written, no ReplayGain")
    func offSwitches() async throws {
        let server = try await TestStationServer.start(Self.configuration(.mp3))
        defer { Task { try? await server.stop() } }
        let (_, folder, finished) = try await RecordTests.record(server) { path in
            var options = RecordingOptions(outputDirectory: path)
            options.measuresLoudness = false
            return options
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        let track = try #require(finished.all.first)
        let tags = try await Self.ffprobeTags(track.path)
        #expect(tags["album"] == "Tones FM")
        #expect(tags["replaygain_track_gain"] == nil)
        #expect(finished.all.allSatisfy { $0.replayGain == nil })
    }
}
