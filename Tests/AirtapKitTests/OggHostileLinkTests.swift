import AirtapTestSupport
import Foundation
@testable import ICYWire
import TestStation
import Testing

/// Ogg stations that push the recorder: a new chained link every few pages, and a Skeleton
/// stream beside the audio.
@Suite("Ogg: short links and Skeleton")
struct OggHostileLinkTests {
    static let titles = ["Flood A", "Flood B", "Flood C"]

    /// Three 4 s tracks, each sent as links of a quarter second: 48 links in the 12 s loop.
    static func floodConfiguration(_ codec: StationCodec) -> StationConfiguration {
        var configuration = StationConfiguration(trackSeconds: 4, pace: .fast, titles: titles, maxSeconds: 11)
        configuration.codec = codec
        configuration.oggLinkSeconds = 0.25
        return configuration
    }

    /// The audio samples in Ogg bytes: the last granule position of each link (links of one
    /// stream have distinct serial numbers), summed.
    static func granuleTotal(_ bytes: [UInt8]) -> Int64 {
        var last: [UInt32: Int64] = [:]
        var framer = OggFramer()
        framer.push(bytes) { event in
            guard case .page(let page, _) = event, page.granulePosition > 0 else { return }
            last[page.serialNumber] = max(last[page.serialNumber] ?? 0, page.granulePosition)
        }
        return last.values.reduce(0, +)
    }

    static func contents(_ folder: URL, _ file: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: folder.appendingPathComponent(file)))
    }

    @Test("record: a station starting a new link every quarter second gets at most a file per second of audio, every page kept, one warning",
          arguments: [StationCodec.vorbis, .opus])
    func linkFlood(codec: StationCodec) async throws {
        let server = try await TestStationServer.start(Self.floodConfiguration(codec))
        defer { Task { try? await server.stop() } }
        let ext = codec == .opus ? "opus" : "ogg"
        let sent = server.program.audio(from: 0, count: server.program.audioByteCount(from: 0, seconds: 11))

        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", folder.path])
        #expect(result.status == 0, "\(result.stderr)")
        let files = filesBelow(folder).filter { $0.hasSuffix(".\(ext)") }.sorted()
        // 11 s of audio: the first link alone (the connection's partial first track), then files
        // of at least a second each. Without the floor: one file per link, 44.
        #expect(files.count >= 2 && files.count <= 13, "\(files.count) files: \(files)")
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("is not one of its own") }
        #expect(warnings.count == 1, "\(result.stderr.suffix(2000))")
        var granules: Int64 = 0
        for file in files {
            let bytes = try Self.contents(folder, file)
            granules += Self.granuleTotal(bytes)
            #expect(bytes.starts(with: Array("OggS".utf8)) && bytes[5] == 2, "\(file) starts with a BOS page")
            #expect(try await OggStationTests.inspect(folder.appendingPathComponent(file).path).decodesCleanly, "\(file)")
        }
        #expect(granules == Self.granuleTotal(sent), "every link's audio is in a file")

        // Untagged, every page lands in a file as sent: the files add up to the stream.
        let bare = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: bare) }
        let untagged = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--no-tags", "--out", bare.path])
        #expect(untagged.status == 0, "\(untagged.stderr)")
        let total = try filesBelow(bare).filter { $0.hasSuffix(".\(ext)") }.reduce(0) { $0 + (try Self.contents(bare, $1)).count }
        #expect(total == sent.count)
    }

    @Test("relay --to FILE: the cue sheet of a link flood has at most an entry per second of audio, and the file every page",
          arguments: [StationCodec.vorbis])
    func linkFloodCueSheet(codec: StationCodec) async throws {
        let server = try await TestStationServer.start(Self.floodConfiguration(codec))
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("show.ogg").path
        let result = try await AirtapBinary.run(["relay", server.streamURL, "--to", file, "--retries", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let size = try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int ?? 0
        #expect(size == server.program.audioByteCount(from: 0, seconds: 11), "every page, nothing else")
        let cue = (try? String(contentsOfFile: file + ".cue", encoding: .utf8)) ?? ""
        let entries = cue.split(separator: "\n").filter { $0.contains("TRACK ") }.count
        #expect(entries >= 2 && entries <= 13, "\(entries) entries:\n\(cue)")
        #expect(result.stderr.split(separator: "\n").filter { $0.contains("is not one of its own") }.count == 1,
                "\(result.stderr.suffix(2000))")
    }
}

extension OggHostileLinkTests {
    static func skeletonConfiguration(_ codec: StationCodec) -> StationConfiguration {
        var configuration = OggStationTests.configuration(codec)
        configuration.oggSkeleton = true
        return configuration
    }

    @Test("Skeleton beside the audio: probe names the audio codec and each link's title", arguments: [StationCodec.vorbis, .opus])
    func skeletonProbe(codec: StationCodec) async throws {
        let server = try await TestStationServer.start(Self.skeletonConfiguration(codec))
        defer { Task { try? await server.stop() } }
        let result = try await AirtapBinary.run(["probe", server.streamURL, "--for", "30"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("codec     \(codec == .opus ? "Opus" : "Vorbis")"), "\(result.stdout)")
        for (index, title) in OggStationTests.titles.enumerated() {
            #expect(result.stdout.contains("[00:00:0\(index * 2).0] title: \(title)"), "\(result.stdout)")
        }
    }

    @Test("Skeleton beside the audio: record writes one playable file per link, without the Skeleton pages; relay --to FILE too",
          arguments: [StationCodec.vorbis, .opus])
    func skeletonRecord(codec: StationCodec) async throws {
        let server = try await TestStationServer.start(Self.skeletonConfiguration(codec))
        defer { Task { try? await server.stop() } }
        let ext = codec == .opus ? "opus" : "ogg"
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", folder.path])
        #expect(result.status == 0, "\(result.stderr)")
        let files = filesBelow(folder).filter { $0.hasSuffix(".\(ext)") }.sorted()
        let complete = files.filter { !$0.contains("incomplete/") }
        #expect(complete.map { ($0 as NSString).lastPathComponent }.sorted() == ["Second & Co.\(ext)", "Третий.\(ext)"], "\(files)")
        for file in files {
            let bytes = try Self.contents(folder, file)
            #expect(bytes.starts(with: Array("OggS".utf8)) && bytes[5] == 2, "\(file) starts with its BOS page")
            #expect(!bytes.contains(Array("fishead".utf8)) && !bytes.contains(Array("fisbone".utf8)), "\(file): no Skeleton page")
        }
        for file in complete {
            let found = try await OggStationTests.inspect(folder.appendingPathComponent(file).path)
            #expect(found.decodesCleanly, "\(file)")
            #expect(abs(found.seconds - 2) < 0.1, "\(file): \(found.seconds) s")
        }

        // 5 s: not round the loop, whose links would repeat their serial numbers in one chained file.
        var shorter = Self.skeletonConfiguration(codec)
        shorter.maxSeconds = 5
        let relayed = try await TestStationServer.start(shorter)
        defer { Task { try? await relayed.stop() } }
        let show = folder.appendingPathComponent("show.\(ext)").path
        let relay = try await AirtapBinary.run(["relay", relayed.streamURL, "--to", show, "--retries", "0"])
        #expect(relay.status == 0, "\(relay.stderr)")
        #expect(try await OggStationTests.inspect(show).decodesCleanly)
        let cue = (try? String(contentsOfFile: show + ".cue", encoding: .utf8)) ?? ""
        for expected in ["TITLE \"Second & Co\"", "INDEX 01 00:02:00", "INDEX 01 00:04:00"] {
            #expect(cue.contains(expected), "\(cue)")
        }
    }
}

extension OggHostileLinkTests {
    @Test("Skeleton beside the audio: play decodes each link at its pitch", arguments: [StationCodec.vorbis, .opus])
    func skeletonPlay(codec: StationCodec) async throws {
        let server = try await TestStationServer.start(Self.skeletonConfiguration(codec))
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let wav = folder.appendingPathComponent("out.wav").path
        let result = try await AirtapBinary.run(["play", server.streamURL, "--device", "file:'\(wav)',wav",
                                                 "--buffer", "0.5s", "--retries", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let audio = try WAVAudio(path: wav)
        let rate = codec == .opus ? 48000 : 44100
        #expect(audio.frameCount >= 6 * rate, "the three 2 s links: \(audio.frameCount) frames")
        for index in 0..<3 {
            let middle = (index * 2 * rate + rate / 2)..<(index * 2 * rate + 3 * rate / 2)
            let expected = StationProgram.frequency(ofTrack: index)
            let found = audio.frequency(frames: middle)
            #expect(abs(found - expected) / expected < 0.02, "link \(index): \(found) Hz, expected \(expected)")
        }
    }
}
