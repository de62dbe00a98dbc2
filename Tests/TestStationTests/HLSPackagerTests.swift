import AESDecryption
import Foundation
@testable import HLSWire
import ICYWire
@testable import TestStation
import Testing

/// The station's HLS is standard: ffprobe reads every variant, and airtap's own readers find the
/// titles where the packager put them.
@Suite struct HLSPackagerTests {
    static let titles = ["Alpha Artist - First Song", "Beta Artist - Second \"Quoted\" Song"]

    static func configuration(_ codec: StationCodec) -> StationConfiguration {
        var configuration = StationConfiguration(bitrate: 64, trackSeconds: 3, pace: .fast, titles: titles)
        configuration.codec = codec
        return configuration
    }

    /// Encoded once per codec, on a thread of their own, and shared.
    static let programs: [StationCodec: SharedValue<StationProgram>] = [
        .mp3: SharedValue { try StationProgram(configuration: configuration(.mp3)) },
        .aac: SharedValue { try StationProgram(configuration: configuration(.aac)) },
    ]

    static func program(_ codec: StationCodec) async throws -> StationProgram {
        let shared = try #require(programs[codec])
        return try await shared.value
    }

    private func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-hls-station-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Writes a VOD playlist of one loop and its segments; returns the playlist's path.
    private func writeVOD(_ packager: HLSPackager, in folder: URL) throws -> URL {
        let count = packager.segments.count
        for sequence in 0..<count {
            try Data(packager.segmentBytes(sequence)).write(to: folder.appendingPathComponent(packager.segmentName(sequence)))
        }
        if let initSegment = packager.initSegment {
            try Data(initSegment).write(to: folder.appendingPathComponent("init.mp4"))
        }
        let playlist = folder.appendingPathComponent("index.m3u8")
        try Data(packager.mediaPlaylist(window: 0..<count, endList: true).utf8).write(to: playlist)
        return playlist
    }

    private func ffprobe(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        process.arguments = ["-v", "error"] + arguments
        let output = ChildProcesses.pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.spawn(process)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "ffprobe \(arguments)")
        return String(decoding: data, as: UTF8.self)
    }

    @Test(arguments: [StationCodec.mp3, .aac], HLSPackager.Container.allCases)
    func ffprobeReadsEveryContainer(codec: StationCodec, container: HLSPackager.Container) async throws {
        let program = try await HLSPackagerTests.program(codec)
        let packager = try HLSPackager(program: program, codec: codec, container: container, titles: .timedID3)
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let playlist = try writeVOD(packager, in: folder)
        let streams = try ffprobe(["-show_entries", "stream=codec_type,codec_name", "-of", "csv=p=0", playlist.path])
        #expect(streams.contains(codec == .aac ? "aac,audio" : "mp3,audio"), "\(streams)")
        if container == .mpegTS {
            #expect(streams.contains("timed_id3,data"), "\(streams)")
        }
        if container == .fmp4 {
            // airtap's own readers: the init's codec, and emsg titles at the tracks' first frames.
            let initSegment = try FMP4InitSegment.parse(try #require(packager.initSegment))
            #expect(initSegment.timescale == program.sampleRate)
            var titles: [String] = []
            var samples = 0
            for sequence in packager.segments.indices {
                var reader = FMP4SegmentReader(initSegment: initSegment)
                let collect: (FMP4Event) -> Void = { event in
                    switch event {
                    case .eventMessage(let message): if let title = TimedID3(tag: message.messageData)?.streamTitle { titles.append(title) }
                    case .sample: samples += 1
                    case .fragmentStart: break
                    }
                }
                try reader.push(packager.segmentBytes(sequence), collect)
                try reader.finish(collect)
            }
            #expect(samples == program.frameOffsets.count)
            #expect(titles.first == Self.titles[0])
            #expect(Set(titles) == Set(Self.titles))
        }
        // Every frame is there: ffprobe's packet count over the playlist is the loop's frame count.
        let packets = try ffprobe(["-select_streams", "a", "-show_entries", "packet=pts", "-of", "csv=p=0", playlist.path])
        #expect(packets.split(separator: "\n").count == program.frameOffsets.count)
    }

    @Test func timedID3TitlesReadBackWhereTheTracksStart() async throws {
        let program = try await HLSPackagerTests.program(.aac)
        let packager = try HLSPackager(program: program, codec: .aac, container: .mpegTS, titles: .timedID3)
        var titles: [(pts: UInt64, title: String)] = []
        for sequence in packager.segments.indices {
            var reader = MPEGTSReader()
            let collect: (TSEvent) -> Void = { event in
                if case .payload(let payload) = event, payload.kind == .timedID3, let pts = payload.pts,
                   let title = TimedID3(tag: payload.bytes)?.streamTitle {
                    titles.append((pts, title))
                }
            }
            reader.push(packager.segmentBytes(sequence), collect)
            reader.finish(collect)
        }
        // One tag at every segment start, and one where the second track starts mid-segment.
        let changes = titles.enumerated().filter { $0.offset == 0 || $0.element.title != titles[$0.offset - 1].title }.map(\.element)
        #expect(changes.map(\.title) == Self.titles)
        let secondTrackTicks = UInt64(program.tracks[1].frameOffsets.isEmpty ? 0 : program.tracks[0].frameCount * program.samplesPerFrame) * 90_000
            / UInt64(program.sampleRate)
        #expect(changes.last?.pts == HLSPackager.firstTimestamp + secondTrackTicks)

        let packed = try HLSPackager(program: program, codec: .aac, container: .packedAudio, titles: .timedID3)
        let head = try #require(try PackedAudioSegmentHead.read(packed.segmentBytes(0))?.get())
        #expect(head.metadata.transportTimestamp == HLSPackager.firstTimestamp)
        #expect(head.metadata.streamTitle == Self.titles[0])
        // A later loop moves the timestamp on by the loop's length.
        let again = try #require(try PackedAudioSegmentHead.read(packed.segmentBytes(packed.segments.count))?.get())
        #expect(again.metadata.transportTimestamp == HLSPackager.firstTimestamp + packed.loopTicks)
    }

    @Test(arguments: [HLSPackager.TitlePlacement.playlistAttributes, .playlistArtistTitle])
    func playlistTitlesParseBack(placement: HLSPackager.TitlePlacement) async throws {
        let program = try await HLSPackagerTests.program(.mp3)
        let packager = try HLSPackager(program: program, codec: .mp3, container: .packedAudio, titles: placement)
        let text = packager.mediaPlaylist(window: 3..<(3 + packager.segments.count), endList: false)
        guard case .media(let playlist) = try HLSPlaylist.parse(Array(text.utf8), baseURL: "http://127.0.0.1/hls/index.m3u8") else {
            Issue.record("not a media playlist")
            return
        }
        #expect(playlist.mediaSequence == 3)
        #expect(!playlist.hasEndList)
        let seen = playlist.segments.compactMap { $0.title?.streamTitle }
        #expect(Set(seen) == Set(Self.titles))
        #expect(playlist.segments.allSatisfy { $0.uri.hasPrefix("http://127.0.0.1/hls/seg") })
    }

    @Test func masterPlaylistOfTwoBitrates() throws {
        let text = HLSPackager.masterPlaylist(variants: [("low/index.m3u8", 64000, "mp4a.40.2"), ("high/index.m3u8", 128_000, "mp4a.40.2")])
        guard case .master(let master) = try HLSPlaylist.parse(Array(text.utf8), baseURL: "http://127.0.0.1/hls/master.m3u8") else {
            Issue.record("not a master playlist")
            return
        }
        #expect(master.chooseVariant()?.uri == "http://127.0.0.1/hls/high/index.m3u8")
        #expect(master.chooseVariant(maxBitrate: 100_000)?.uri == "http://127.0.0.1/hls/low/index.m3u8")
    }
}

@Suite struct HLSSiteTests {
    private func site(isVOD: Bool) async throws -> HLSSite {
        let program = try await HLSPackagerTests.program(.mp3)
        let packager = try HLSPackager(program: program, codec: .mp3, container: .mpegTS, titles: .timedID3)
        return HLSSite(variants: [HLSSite.Variant(name: "high", bandwidth: 64000, codecs: "mp4a.40.34", packager: packager)],
                       isVOD: isVOD, windowSegments: 3)
    }

    private func media(_ response: HLSSite.Response?) throws -> HLSMediaPlaylist {
        let body = try #require(response?.body)
        guard case .media(let playlist) = try HLSPlaylist.parse(body, baseURL: "http://127.0.0.1/hls/high/index.m3u8") else {
            throw HLSPlaylistError.empty
        }
        return playlist
    }

    @Test func liveWindowSlidesWithTheClock() async throws {
        let site = try await site(isVOD: false)
        // The window moves by the loop's average segment (the last segment of a loop is shorter).
        let segments = site.variants[0].packager.segments
        let seconds = segments.map(\.duration).reduce(0, +) / Double(segments.count)
        let start = try media(site.response(path: "/hls/high/index.m3u8", elapsedSeconds: 0))
        #expect(start.segments.map(\.sequence) == [0, 1, 2])
        #expect(!start.hasEndList)
        let later = try media(site.response(path: "/hls/high/index.m3u8", elapsedSeconds: seconds * 10 + 0.01))
        #expect(later.segments.map(\.sequence) == [10, 11, 12])
        #expect(site.response(path: "/hls/high/seg12.ts", elapsedSeconds: seconds * 10 + 0.01)?.status == 200)
        #expect(site.response(path: "/hls/high/seg13.ts", elapsedSeconds: seconds * 10 + 0.01)?.status == 404)
        // Gone from the window, still served a while; long gone, not.
        #expect(site.response(path: "/hls/high/seg8.ts", elapsedSeconds: seconds * 10 + 0.01)?.status == 200)
        #expect(site.response(path: "/hls/high/seg2.ts", elapsedSeconds: seconds * 10 + 0.01)?.status == 404)
    }

    @Test func vodListsTheLoopAndEnds() async throws {
        let site = try await site(isVOD: true)
        let playlist = try media(site.response(path: "/hls/high/index.m3u8", elapsedSeconds: 1000))
        #expect(playlist.hasEndList)
        #expect(playlist.segments.count == site.variants[0].packager.segments.count)
        #expect(site.response(path: "/hls/master.m3u8", elapsedSeconds: 0)?.status == 200)
        #expect(site.response(path: "/hls/low/index.m3u8", elapsedSeconds: 0)?.status == 404)
        #expect(site.response(path: "/hls/high/seg-1.ts", elapsedSeconds: 0)?.status == 404)
        #expect(site.response(path: "/stream", elapsedSeconds: 0) == nil)
    }
}

/// The station serving HLS over HTTP, read by ffprobe as any HLS client would.
@Suite struct HLSServingTests {
    @Test func encryptedSegmentsDecryptToThePlainOnes() async throws {
        let program = try await HLSPackagerTests.program(.aac)
        let site = try HLSSite.make(programs: [(program, 64)], codec: .aac, container: .packedAudio, titles: .timedID3,
                                    segmentSeconds: 2, isVOD: true, isEncrypted: true)
        let text = String(decoding: try #require(site.response(path: "/hls/64k/index.m3u8", elapsedSeconds: 0)?.body), as: UTF8.self)
        guard case .media(let playlist) = try HLSPlaylist.parse(Array(text.utf8), baseURL: "http://127.0.0.1/hls/64k/index.m3u8") else {
            Issue.record("not a media playlist")
            return
        }
        let segment = try #require(playlist.segments.dropFirst(2).first)
        let key = try #require(segment.key)
        #expect(key.uri == "http://127.0.0.1/hls/64k/key")
        let keyBytes = try #require(site.response(path: "/hls/64k/key", elapsedSeconds: 0)?.body)
        let encrypted = try #require(site.response(path: "/hls/64k/seg2.aac", elapsedSeconds: 0)?.body)
        let plain = try AES128CBCDecryptor.decrypt(encrypted, key: keyBytes, iv: key.initializationVector(forSequence: segment.sequence))
        #expect(plain == site.variants[0].packager.segmentBytes(2))
        #expect(encrypted != plain)
    }

    @Test(arguments: [false, true])
    func ffprobeReadsTheServedMasterPlaylist(encrypted: Bool) async throws {
        let program = try await HLSPackagerTests.program(.aac)
        let site = try HLSSite.make(programs: [(program, 64)], codec: .aac, container: .mpegTS, titles: .timedID3,
                                    segmentSeconds: 2, isVOD: true, isEncrypted: encrypted)
        let server = try await TestStationServer.start(HLSPackagerTests.configuration(.aac), program: program, hls: site)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        process.arguments = ["-v", "error", "-rw_timeout", "15000000", "-show_entries", "stream=codec_type,codec_name", "-of", "csv=p=0",
                             server.url(path: "/hls/master.m3u8")]
        let output = ChildProcesses.pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try ChildProcesses.run(process)
        } catch {
            try await server.stop()
            throw error
        }
        // The output is a few lines: it fits the pipe, so waiting first cannot deadlock.
        let exited = await ChildProcesses.waitForExit(process, timeout: .seconds(60))
        ChildProcesses.terminate(process)
        try await server.stop()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(exited && process.terminationStatus == 0)
        #expect(text.contains("aac,audio"), "\(text)")
        #expect(text.contains("timed_id3,data"), "\(text)")
    }
}
