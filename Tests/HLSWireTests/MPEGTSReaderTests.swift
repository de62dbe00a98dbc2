import Foundation
@testable import HLSWire
@testable import ICYWire
import SplitFixtures
import Testing

/// The MPEG-TS reader on segments ffmpeg's HLS muxer wrote.
@Suite struct MPEGTSReaderTests {
    struct Run: Equatable {
        var payloads: [TSPayload] = []
        var dropped: [TSEvent] = []
        var skipped = 0
    }

    private func read(_ chunks: [[UInt8]], maxPESLength: Int = 512 * 1024) -> Run {
        var reader = MPEGTSReader(maxPESLength: maxPESLength)
        var run = Run()
        let collect: (TSEvent) -> Void = { event in
            switch event {
            case .payload(let payload): run.payloads.append(payload)
            case .skipped(let count): run.skipped += count
            case .droppedPayload: run.dropped.append(event)
            }
        }
        for chunk in chunks { reader.push(chunk, collect) }
        reader.finish(collect)
        return run
    }

    @Test func aacSegmentGivesFFmpegsADTSStreamAndPTS() async throws {
        let output = try await FFmpegHLS.output()
        for index in 0..<3 {
            let segment = try output.bytes("ts\(index).ts")
            let run = read([segment])
            #expect(run.dropped.isEmpty)
            #expect(run.skipped == 0)
            #expect(run.payloads.allSatisfy { $0.kind == .aacADTS })
            // The payloads are exactly the ADTS frames ffmpeg itself extracts.
            let adts = try FFmpegHLS.ffmpeg(["-i", "ts\(index).ts", "-c:a", "copy", "-f", "adts", "-"], in: output.folder)
            #expect(run.payloads.flatMap(\.bytes) == [UInt8](adts), "segment \(index)")
            // The first PES's PTS is the first packet's.
            let pts = try FFmpegHLS.ffmpeg(["-show_entries", "packet=pts", "-of", "csv=p=0", "ts\(index).ts"], in: output.folder, tool: "ffprobe")
            let firstPTS = String(decoding: pts, as: UTF8.self).split(separator: "\n").first.flatMap { UInt64($0.filter(\.isNumber)) }
            #expect(run.payloads.first?.pts == firstPTS)
            #expect(run.payloads.allSatisfy { $0.pts != nil })
        }
    }

    @Test func mp3SegmentGivesMPEGAudioFrames() async throws {
        let output = try await FFmpegHLS.output()
        let run = read([try output.bytes("m1.ts")])
        #expect(run.dropped.isEmpty)
        #expect(!run.payloads.isEmpty)
        #expect(run.payloads.allSatisfy { $0.kind == .mpegAudio })
        let mp3 = try FFmpegHLS.ffmpeg(["-i", "m1.ts", "-c:a", "copy", "-write_xing", "0", "-id3v2_version", "0", "-f", "mp3", "-"], in: output.folder)
        #expect(run.payloads.flatMap(\.bytes) == [UInt8](mp3))
    }

    @Test func splitInvariant() async throws {
        let segment = try await FFmpegHLS.output().bytes("ts1.ts")
        let reference = read([segment])
        for (index, chunks) in Splits.all(segment, randomCount: 12).enumerated().dropFirst() {
            #expect(read(chunks) == reference, "split #\(index)")
        }
    }

    @Test func regainsSyncAfterGarbage() async throws {
        let segment = try await FFmpegHLS.output().bytes("ts0.ts")
        let reference = read([segment])
        let garbage = (0..<333).map { UInt8(($0 * 7 + 1) % 0x40) }  // no 0x47
        let cut = 188 * 20
        let damaged = Array(segment[..<cut]) + garbage + Array(segment[cut...]) + garbage.prefix(50)
        for chunks in Splits.all(damaged, randomCount: 4) {
            let run = read(chunks)
            #expect(run.skipped == garbage.count + 50)
            #expect(run.payloads == reference.payloads)
        }
    }

    /// Garbage holding 0x47 bytes: a lone 0x47 must not be taken for a packet start in one split
    /// and rejected in another.
    @Test func falseSyncBytesInGarbageAreSplitInvariant() async throws {
        let segment = try await FFmpegHLS.output().bytes("ts2.ts")
        // Every fifth byte 0x47: byte by byte, the read position stops on many of them with fewer
        // than 188 bytes behind, where only the searching state keeps a lone 0x47 from counting.
        let garbage: [UInt8] = (0..<600).map { $0 % 5 == 0 ? 0x47 : UInt8($0 % 64) }
        let damaged = garbage + segment
        let reference = read([damaged])
        #expect(reference.payloads.count == read([segment]).payloads.count)
        for (index, chunks) in Splits.all(damaged, randomCount: 8).enumerated().dropFirst() {
            #expect(read(chunks) == reference, "split #\(index)")
        }
    }

    @Test func aLostPacketDropsItsPESWholeAndNothingElse() async throws {
        let segment = try await FFmpegHLS.output().bytes("ts0.ts")
        let reference = read([segment])
        // The first audio packet that continues a PES (not a unit start), well into the segment.
        let packets = stride(from: 0, to: segment.count, by: 188).map { Array(segment[$0..<$0 + 188]) }
        let audioPID = try #require(reference.payloads.first?.pid)
        let lost = try #require(packets.indices.dropFirst(30).first { index in
            let packet = packets[index]
            return (Int(packet[1] & 0x1F) << 8 | Int(packet[2])) == audioPID && packet[1] & 0x40 == 0
        })
        var damaged = packets
        damaged.remove(at: lost)
        let run = read([damaged.flatMap { $0 }])
        #expect(run.dropped == [.droppedPayload(pid: audioPID, reason: .continuityError)])
        #expect(run.payloads.count == reference.payloads.count - 1)
        // Every payload that comes out is one of the originals, intact.
        #expect(run.payloads.allSatisfy { reference.payloads.contains($0) })
    }

    @Test func pesSizeIsBounded() async throws {
        let segment = try await FFmpegHLS.output().bytes("ts0.ts")
        let run = read([segment], maxPESLength: 1000)
        #expect(run.payloads.isEmpty)
        #expect(!run.dropped.isEmpty)
        #expect(run.dropped.allSatisfy { if case .droppedPayload(_, .tooLarge) = $0 { true } else { false } })
    }

    @Test func noiseIsSkippedWithoutTrapping() {
        var generator = SplitMix64(seed: 7)
        let noise = generator.bytes(50_000)
        let run = read([noise])
        #expect(run.payloads.isEmpty)
        // Random packets with sync bytes: their bytes are either skipped or read as (ignored) packets.
        #expect(run.skipped <= noise.count)
    }
}
