import AirtapKit
import AirtapTestSupport
import Foundation
import ICYWire
import TestStation
import Testing

/// `relay --to FILE` writes the same cue sheet as `record --single`: INDEX from the split search.
@Suite("Relay: the cue sheet's cuts")
struct RelayCueTests {
    @Test("relay --to FILE and record --single on the same stream (1.5 s gaps, titles 0.9 s late): identical INDEX lines, each in the silence",
          arguments: [StationConfiguration.Codec.mp3, .aac])
    func sameCutsAsRecordSingle(codec: StationConfiguration.Codec) async throws {
        var configuration = StationConfiguration(metaint: 4000, trackSeconds: 4, gapSeconds: 1.5, metaOffsetSeconds: 0.9,
                                                 pace: .fast, titles: SplitAudioTests.titles, maxSeconds: 18)
        configuration.codec = codec
        let server = try await TestStationServer.start(configuration)
        defer { Task { try? await server.stop() } }
        let program = server.program
        let folder = try AirtapBinary.temporaryFolder()
        let name = "show.\(codec.rawValue)"
        let relayed = folder.appendingPathComponent("relay-" + name).path
        let recorded = folder.appendingPathComponent("record-" + name).path
        let relay = try await AirtapBinary.run(["relay", server.streamURL, "--to", relayed])
        #expect(relay.status == 0, "\(relay.stderr)")
        let record = try await AirtapBinary.run(["record", server.streamURL, "--single", recorded, "--retries", "0"])
        #expect(record.status == 0, "\(record.stderr)")

        func indexes(_ path: String) throws -> [String] {
            try String(contentsOfFile: path + ".cue", encoding: .utf8).split(separator: "\n")
                .filter { $0.contains("INDEX 01") }.map { String($0.split(separator: " ").last ?? "") }
        }
        let relayIndexes = try indexes(relayed)
        #expect(relayIndexes == (try indexes(recorded)))
        #expect(relayIndexes.count >= 4)
        // The first title names the track tuned into; the second (A, 0.9 s into the connection)
        // has no gap before it and stays where it arrived. Every later INDEX lies in a gap: at
        // most 1.5 s before a track's first frame.
        #expect(relayIndexes.count >= 3)
        let boundaries = program.tracks.map { program.boundarySeconds(ofTrack: $0.index) }
            + program.tracks.map { program.boundarySeconds(ofTrack: $0.index) + program.loopSeconds }
        for index in relayIndexes.dropFirst(2) {
            let parts = index.split(separator: ":").compactMap { Double($0) }
            let seconds = parts[0] * 60 + parts[1] + parts[2] / 75
            #expect(boundaries.contains { seconds > $0 - 1.5 && seconds <= $0 }, "INDEX \(index) is not in a gap: \(boundaries)")
        }
    }
}
