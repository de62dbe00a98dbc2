import Foundation
@testable import HLSWire
import ICYWire
@testable import TestStation
import Testing

/// Segments cut inside PES packets, as VLC's livehttp cuts them, from ffmpeg's own MPEG-TS.
@Suite struct MidPESSegmenterTests {
    /// 5 s of 440 Hz AAC in MPEG-TS by ffmpeg's muxer (several ADTS frames per PES), and its ADTS
    /// stream as ffmpeg extracts it. Made once, on a thread of its own.
    static let ffmpegTS = Task<(ts: [UInt8], adts: [UInt8]), any Error> {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    let ts = try ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=5:sample_rate=44100",
                                         "-c:a", "aac", "-b:a", "64k", "-f", "mpegts", "-"], input: nil)
                    return (ts, try ffmpeg(["-f", "mpegts", "-i", "in.ts", "-c:a", "copy", "-f", "adts", "-"], input: ts))
                })
            }.start()
        }
    }

    enum Failure: Error { case ffmpegFailed }

    /// Runs ffmpeg in a folder of its own, `input` (if any) there as `in.ts`; returns its standard output.
    static func ffmpeg(_ arguments: [String], input: [UInt8]?) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-midpes-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + arguments
        process.currentDirectoryURL = folder
        if let input { try Data(input).write(to: folder.appendingPathComponent("in.ts")) }
        let output = ChildProcesses.pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.spawn(process)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure.ffmpegFailed }
        return [UInt8](data)
    }

    struct Read: Equatable {
        var audio: [UInt8] = []
        var drops: [TSDropReason] = []
    }

    static func read(_ segments: [[UInt8]], carrying: Bool) -> Read {
        var read = Read()
        let collect: (TSEvent) -> Void = { event in
            switch event {
            case .payload(let payload) where payload.kind == .aacADTS: read.audio += payload.bytes
            case .droppedPayload(_, let reason): read.drops.append(reason)
            default: break
            }
        }
        var unfinished: [TSUnfinishedPES] = []
        for segment in segments {
            var reader = MPEGTSReader(continuing: carrying ? unfinished : [])
            reader.push(segment, collect)
            unfinished = reader.finish(keepingUnfinished: carrying, collect)
        }
        return read
    }

    @Test("ffmpeg's MPEG-TS cut in four inside PES packets: carried across the cuts, every ADTS frame ffmpeg extracts; read apart, a PES lost at each cut")
    func carriedAcrossCuts() async throws {
        let (ts, adts) = try await Self.ffmpegTS.value
        let segments = try #require(MidPESSegmenter.segments(ts, parts: 4))
        #expect(segments.count == 4)
        #expect(Self.read([ts], carrying: false) == Read(audio: adts, drops: []), "the whole stream reads as ffmpeg reads it")
        let carried = Self.read(segments, carrying: true)
        #expect(carried.drops.isEmpty)
        #expect(carried.audio == adts)
        let apart = Self.read(segments, carrying: false)
        #expect(apart.drops == [.truncated, .truncated, .truncated], "each cut falls inside a PES")
        #expect(apart.audio.count < adts.count)
    }

    @Test("A carried PES whose next packet does not continue it (a counter jump, a new PES) is dropped, and what follows reads whole")
    func carriedButNotContinued() async throws {
        let (ts, _) = try await Self.ffmpegTS.value
        let segments = try #require(MidPESSegmenter.segments(ts, parts: 2))
        var first = MPEGTSReader()
        first.push(segments[0]) { _ in }
        let unfinished = first.finish(keepingUnfinished: true) { _ in }
        #expect(unfinished.count == 1)
        var jumped = unfinished
        jumped[0].continuity = (jumped[0].continuity + 5) & 0x0F
        var drops: [TSDropReason] = []
        var reader = MPEGTSReader(continuing: jumped)
        reader.push(segments[1]) { if case .droppedPayload(_, let reason) = $0 { drops.append(reason) } }
        reader.finish { if case .droppedPayload(_, let reason) = $0 { drops.append(reason) } }
        #expect(drops == [.continuityError])
        // A segment that is only PAT and PMT: the carried PES is never continued.
        var bare = MPEGTSReader(continuing: unfinished)
        drops = []
        bare.push(segments[1].prefix(2 * MidPESSegmenter.packetLength)) { _ in }
        bare.finish { if case .droppedPayload(_, let reason) = $0 { drops.append(reason) } }
        #expect(drops == [.truncated])
    }
}
