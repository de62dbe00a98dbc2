import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapTestSupport
import Foundation
import ICYWire
import Logging
import Testing

/// `library scan` measures each file's loudness from its audio, as the recorder does while it
/// records: the same decoder, the same EBU R128 meter, so both give the same figures.
@Suite struct LibraryScanLoudnessTests {
    @Test func aScannedFileGetsTheLoudnessGainAndPeakTheRecorderMeasured() throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        var options = RecordingOptions(outputDirectory: folder.appendingPathComponent("out").path)
        options.measuresLoudness = true
        let finished = FinishedTracks()
        let recorder = TrackRecorder(station: Station(id: "tones", name: "Tones FM", urls: ["http://127.0.0.1:9/"]),
                                     options: finished.collecting(options), logger: Logger(label: "test")) { _ in }
        let events = [try RecordingAcrossAGapTests.head(), RecordingAcrossAGapTests.title("Tones - A", atFrame: 0)]
            + RecordingAcrossAGapTests.packets(0..<200) + [.ended(.endOfStream)]
        for event in events { try recorder.receive(event) }
        let track = try #require(finished.all.first)
        let measured = try #require(track.replayGain, "the recorder measured it")

        let index = try LibraryIndex(path: folder.appendingPathComponent("library.sqlite").path)
        let report = try LibraryCatalog.scan(folder.appendingPathComponent("out").path, into: index)
        #expect(report.skipped.isEmpty, "\(report.skipped)")
        let entry = try #require(try index.entry(path: track.path))
        let loudness = try #require(entry.loudness, "scanned without loudness")
        #expect(abs(loudness - measured.integratedLoudness) < 0.05, "\(loudness) LUFS, the recorder measured \(measured.integratedLoudness)")
        #expect(abs((entry.gain ?? .nan) - measured.trackGain) < 0.05, "\(String(describing: entry.gain))")
        #expect(abs((entry.peak ?? .nan) - measured.samplePeak) < 0.01, "\(String(describing: entry.peak))")
    }
}
