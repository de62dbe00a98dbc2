import AirtapKit
import AirtapRecording
import AirtapTestSupport
import Foundation
import ICYWire
import TestStation
import Testing

/// Recording AAC stations: ADTS files with the same ID3v2.4 tag at the start as MP3, whole frames
/// only, and cue sheets that do not claim MP3.
@Suite("Recording: AAC")
struct RecordAACTests {
    static let titles = ["Airtap Test Tones - A440", "Ünïcödé Tönes – Sœur's Song; Part=2", "Guns N' Roses - Sweet Child o' Mine"]

    static func configuration() -> StationConfiguration {
        var configuration = StationConfiguration(metaint: 4000, bitrate: 96, trackSeconds: 2, pace: .fast, titles: titles, maxSeconds: 9)
        configuration.codec = .aac
        return configuration
    }

    @Test("Per track: .aac files that start with an ID3v2.4 tag (ffprobe reads it), then the station's ADTS frames, every frame once")
    func perTrack() async throws {
        let server = try await TestStationServer.start(Self.configuration())
        defer { Task { try? await server.stop() } }
        let program = server.program
        let (_, _, finished) = try await RecordTests.record(server) { RecordingOptions(outputDirectory: $0) }
        let tracks = finished.all
        #expect(tracks.count >= 4)
        #expect(tracks.allSatisfy { $0.path.hasSuffix(".aac") })
        let contents = try tracks.map { try RecordedFileContents(path: $0.path) }
        let sentCount = program.audioByteCount(from: 0, seconds: 9)
        #expect(contents.flatMap(\.audio) == program.audio(from: 0, count: sentCount), "every ADTS frame once, in order")
        for (track, file) in zip(tracks, contents) {
            // Nothing between the tag and the first frame, and no Xing frame: the first byte after
            // the tag is an ADTS sync word.
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: track.path)))
            let tagLength = try #require(ID3v2Header(bytes)).totalLength
            #expect(bytes.count == tagLength + file.audio.count)
            #expect(ADTSHeader(bytes[tagLength...]) != nil)
            #expect(file.xingCounts == nil)
            #expect(file.tag?.title == track.info?.title)
            #expect(file.tag?["TALB"] == "Tones FM")
        }
        let tagged = try #require(tracks.first { $0.isComplete && $0.info?.artist == "Ünïcödé Tönes" })
        let probe = try await Self.ffprobe(tagged.path)
        #expect(probe.contains("TAG:title=Sœur's Song; Part=2"), "\(probe)")
        #expect(probe.contains("TAG:artist=Ünïcödé Tönes"))
        #expect(probe.contains("codec_name=aac"))
    }

    @Test("--single on AAC: one .aac file, the cue sheet's FILE line says WAVE, not MP3")
    func singleFile() async throws {
        let server = try await TestStationServer.start(Self.configuration())
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let path = folder.appendingPathComponent("all.aac").path
        let result = try await AirtapBinary.run(["record", server.streamURL, "--single", path, "--retries", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let contents = try RecordedFileContents(path: path)
        #expect(contents.audio == server.program.audio(from: 0, count: server.program.audioByteCount(from: 0, seconds: 9)))
        let cue = try String(contentsOfFile: path + ".cue", encoding: .utf8)
        #expect(cue.contains("FILE \"all.aac\" WAVE"), "\(cue)")
        #expect(!cue.contains(" MP3"))
        #expect(cue.components(separatedBy: "INDEX 01").count - 1 >= 4)
    }

    static func ffprobe(_ path: String) async throws -> String {
        try await toolOutput("/usr/bin/ffprobe", ["-hide_banner", "-show_entries", "stream=codec_name:format_tags=title,artist,album",
                                                 "-of", "default=noprint_wrappers=1", path])
    }
}
