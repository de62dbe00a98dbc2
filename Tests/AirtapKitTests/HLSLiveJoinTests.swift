import AirtapKit
import AirtapTestSupport
import Foundation
import ICYWire
import Locking
@testable import TestStation
import Testing

/// Joining a live HLS station mid-song whose timed metadata carries a title only where a song
/// starts: the audio before the first title is a fragment without a title, and the song that
/// title announces is whole, cut at its own start.
@Suite("HLS: the first song after a live join")
struct HLSLiveJoinTests {
    /// The live edge when the first playlist is asked for: the join, three segments back, is
    /// segment 6 (6-7 s of the loop, the end of the second track's tone, after its title even in
    /// packed audio, whose titles wait for a segment's head); the third track starts at 8 s.
    static let firstEdge = 9
    static let windowSegments = 6

    /// A live window over `count` segments of a loop that starts moving when the first playlist is
    /// asked for (1 s per segment), so every run joins at the same place however slow the machine.
    static func withLiveWindow(count: Int, playlist: @escaping @Sendable (Range<Int>) -> String,
                               segment: @escaping @Sendable (String) -> (type: String, body: [UInt8])?,
                               _ body: (ScriptedServer) async throws -> Void) async throws {
        let started = Locked<ContinuousClock.Instant?>(nil)
        try await HLSStationTests.withScripted({ path in
            let name = String(path.dropFirst())
            if name == "index.m3u8" {
                let now = ContinuousClock.now
                let start = started.withLock { first in
                    let start = first ?? now
                    first = start
                    return start
                }
                let elapsed = now - start
                let edge = firstEdge + Int(elapsed / .seconds(1))
                return (200, "application/vnd.apple.mpegurl", Array(playlist((edge - windowSegments)..<edge).utf8))
            }
            return segment(name).map { (200, $0.type, $0.body) }
        }) { server, _ in try await body(server) }
    }

    /// `record --for 15s`: the files it left, by path below the folder, with their seconds of audio.
    static func record(_ url: String) async throws -> (files: [String: Double], stderr: String) {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await AirtapBinary.run(["record", url, "--out", folder.path, "--for", "15s"])
        #expect(result.status == 0, "\(result.stderr)")
        var files: [String: Double] = [:]
        for path in try FileManager.default.subpathsOfDirectory(atPath: folder.path) where path.hasSuffix(".aac") {
            let contents = try RecordedFileContents(path: folder.appendingPathComponent(path).path)
            files[path] = Double(contents.frames.count * 1024) / 44100
        }
        return (files, result.stderr)
    }

    /// The join's fragment (from 6 s to the cut in the silence before 8 s) has no title; the third track is a
    /// complete file of about its 4 s, not joined to the fragment in incomplete/.
    static func expectWholeFirstSong(_ files: [String: Double], stderr: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let third = HLSStationTests.titles[2]
        let incomplete = files.filter { $0.key.contains("incomplete/") }
        let whole = files.filter { !$0.key.contains("incomplete/") && ($0.key as NSString).lastPathComponent == "\(third).aac" }
        #expect(whole.count == 1, "\(files)\n\(stderr)", sourceLocation: sourceLocation)
        #expect(whole.values.allSatisfy { abs($0 - 4) < 0.6 }, "\(whole)", sourceLocation: sourceLocation)
        // The stop may cut a later loop's third track short; none holds the join's audio and the song.
        #expect(!incomplete.contains { $0.key.contains(third) && $0.value > 4.5 }, "\(incomplete)", sourceLocation: sourceLocation)
        let fragment = incomplete.filter { path, _ in !HLSStationTests.titles.contains { path.contains($0) } }
        #expect(fragment.count == 1, "the join's fragment, without a title: \(incomplete)", sourceLocation: sourceLocation)
        #expect(fragment.values.allSatisfy { $0 > 0.8 && $0 < 2.6 }, "\(fragment)", sourceLocation: sourceLocation)
    }

    @Test("The test station's packed audio, MPEG-TS and fMP4 with titles only where a track starts",
          arguments: HLSPackager.Container.allCases)
    func packager(container: HLSPackager.Container) async throws {
        let program = try await HLSStationTests.program(.aac)
        let packager = try HLSPackager(program: program, codec: .aac, container: container, titles: .timedID3OnChange, segmentSeconds: 1)
        try await Self.withLiveWindow(count: packager.segments.count, playlist: { packager.mediaPlaylist(window: $0, endList: false) },
                                      segment: { name in
            if name == "init.mp4", let initSegment = packager.initSegment { return ("video/mp4", initSegment) }
            guard name.hasPrefix("seg"), let sequence = Int(name.dropFirst(3).prefix { $0.isNumber }) else { return nil }
            return ("application/octet-stream", packager.segmentBytes(sequence))
        }) { server in
            let (files, stderr) = try await Self.record(server.url("/index.m3u8"))
            Self.expectWholeFirstSong(files, stderr: stderr)
        }
    }

    @Test("ffmpeg's HLS muxer (MPEG-TS segments of about 1 s), each title in the #EXTINF of the segment its track starts in")
    func ffmpegSegments() async throws {
        let program = try await HLSStationTests.program(.aac)
        let segments = try Self.ffmpegHLS(of: program.loop)
        #expect(segments.count >= 10, "\(segments.map(\.duration))")
        // Each track's title on the segment holding its first second.
        var titles: [Int: String] = [:], trackStart = 0.0, segmentStart = 0.0
        var tracks = program.tracks.makeIterator(), track = tracks.next()
        for (index, segment) in segments.enumerated() {
            if let current = track, trackStart < segmentStart + segment.duration {
                titles[index] = current.title
                trackStart += current.seconds
                track = tracks.next()
            }
            segmentStart += segment.duration
        }
        #expect(titles.count == program.tracks.count, "\(titles)")
        let segmentTitles = titles
        @Sendable func playlist(_ window: Range<Int>) -> String {
            var lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:1", "#EXT-X-MEDIA-SEQUENCE:\(window.lowerBound)"]
            for sequence in window {
                if sequence % segments.count == 0, sequence > window.lowerBound { lines.append("#EXT-X-DISCONTINUITY") }
                let title = segmentTitles[sequence % segments.count] ?? ""
                lines += [String(format: "#EXTINF:%.3f,", segments[sequence % segments.count].duration) + title, "s\(sequence).ts"]
            }
            return lines.joined(separator: "\n") + "\n"
        }
        try await Self.withLiveWindow(count: segments.count, playlist: playlist, segment: { name in
            guard name.hasPrefix("s"), name.hasSuffix(".ts"), let sequence = Int(name.dropFirst().dropLast(3)) else { return nil }
            return ("video/mp2t", segments[sequence % segments.count].bytes)
        }) { server in
            let (files, stderr) = try await Self.record(server.url("/index.m3u8"))
            Self.expectWholeFirstSong(files, stderr: stderr)
        }
    }

    /// `adts` (one loop of the station) through ffmpeg's `-f hls` muxer: its MPEG-TS segments, in
    /// order, with their durations.
    static func ffmpegHLS(of adts: [UInt8]) throws -> [(duration: Double, bytes: [UInt8])] {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(adts).write(to: folder.appendingPathComponent("loop.aac"))
        try runFFmpeg(["-f", "aac", "-i", "loop.aac", "-c", "copy",
                       "-f", "hls", "-hls_time", "1", "-hls_playlist_type", "vod", "-hls_segment_filename", "f%d.ts", "f.m3u8"], in: folder)
        let lines = try String(contentsOf: folder.appendingPathComponent("f.m3u8"), encoding: .utf8).split(separator: "\n")
        var segments: [(duration: Double, bytes: [UInt8])] = []
        for (line, next) in zip(lines, lines.dropFirst()) where line.hasPrefix("#EXTINF:") {
            let duration = Double(line.dropFirst("#EXTINF:".count).prefix { $0 != "," }) ?? 0
            segments.append((duration, try [UInt8](Data(contentsOf: folder.appendingPathComponent(String(next))))))
        }
        return segments
    }
}
