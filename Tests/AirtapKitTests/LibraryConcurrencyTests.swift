@testable import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import Foundation
@testable import Locking
import Logging
@testable import TestStation
import Testing

/// One process recording several stations: the same song finishing on all of them at once is
/// kept once, whatever the order in which their fingerprints and lookups interleave (the lookup
/// and the insert are one transaction under the index's lock; the fingerprints are made outside it).
@Suite struct LibraryConcurrencyTests {
    @Test(.enabled(if: RealMusic.isAvailable)) func theSameSongFinishingOnSeveralStationsAtOnceIsKeptOnce() async throws {
        let song = try await RealMusic.frames(RealMusic.frontiers, from: 30, seconds: 40, bitrate: 128)
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = TrackLibrary(index: try LibraryIndex(path: folder.path + "/library.sqlite"), dedupe: true,
                                   logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let stations = 4
        for round in 0..<3 {
            let paths = try (0..<stations).map { station in
                let path = folder.path + "/out/S\(station)/Song \(round).mp3"
                try FileManager.default.createDirectory(atPath: folder.path + "/out/S\(station)", withIntermediateDirectories: true)
                try Data(song).write(to: URL(fileURLWithPath: path))
                return path
            }
            let verdicts = Locked<[TrackLibrary.Verdict]>([])
            let start = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for path in paths {
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    start.wait()
                    let track = RecordedTrack(path: path, info: nil, isComplete: true, frameCount: 1, audioByteCount: song.count, seconds: 40)
                    let verdict = library.trackFinished(track, stationID: "s", stationName: "S", recordingFolder: folder.path + "/out")
                    verdicts.withLock { $0.append(verdict) }
                }
            }
            for _ in paths { start.signal() }
            await withCheckedContinuation { finished in done.notify(queue: .global()) { finished.resume() } }
            let kept = verdicts.withLock { $0 }.filter { $0 == .keep }.count
            // The first round keeps one; later rounds find it and keep none.
            #expect(kept == (round == 0 ? 1 : 0), "round \(round): \(verdicts.withLock { $0 })")
        }
    }

    /// Through `airtap record A B --dedupe`: two stations play the same song at the same time,
    /// so both tracks finish within moments of each other in one process.
    @Test(.enabled(if: RealMusic.isAvailable)) func twoStationsOfOneRunPlayingTheSameSongKeepItOnce() async throws {
        let intro = try await RealMusic.frames(RealMusic.timeToStrike, from: 100, seconds: 8, bitrate: 128)
        let outro = try await RealMusic.frames(RealMusic.timeToStrike, from: 200, seconds: 8, bitrate: 128)
        let songA = try await RealMusic.frames(RealMusic.frontiers, from: 30, seconds: 60, bitrate: 128)
        let songB = try await RealMusic.frames(RealMusic.frontiers, from: 31.7, seconds: 58, bitrate: 112)
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let one = try await LibraryRecordTests.serve(LibraryRecordTests.stream(song: songA, title: "Alpha - Frontiers", intro: intro, outro: outro), name: "One")
        let two = try await LibraryRecordTests.serve(LibraryRecordTests.stream(song: songB, title: "Beta - Other", intro: intro, outro: outro), name: "Two")
        defer { Task { try? await one.stop(); try? await two.stop() } }
        let out = folder.appendingPathComponent("out")
        let result = try await AirtapBinary.run(["record", one.url("/"), two.url("/"), "--retries", "0", "--out", out.path,
                                                 "--library", folder.path + "/library.sqlite", "--dedupe", "--log-level", "info"])
        #expect(result.status == 0, "\(result.stderr)")
        let kept = LibraryRecordTests.completeFiles(below: out)
        #expect(kept.count == 1, "\(kept)\n\(result.stderr)")
    }
}
