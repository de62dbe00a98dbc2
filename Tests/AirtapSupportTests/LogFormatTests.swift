import AirtapKit
import AirtapSupport
import AirtapTestSupport
import Foundation
import Logging
import TestStation
import Testing

@Suite("One log format: logfmt on stderr and in --log, reopened on SIGUSR1")
struct LogFormatTests {
    @Test("A line is time, level, the metadata sorted, msg; values with spaces, quotes or = are quoted")
    func logfmtLines() {
        let line = FileLogHandler.line(time: "2026-11-23T21:00:00Z", level: .info,
                                       metadata: ["station": "late night", "position": "16000", "url": "http://x/?a=b"],
                                       message: #"title: Say "hi" \ bye"#)
        #expect(line == #"time=2026-11-23T21:00:00Z level=info position=16000 station="late night" url="http://x/?a=b" msg="title: Say \"hi\" \\ bye""# + "\n")
        #expect(FileLogHandler.logfmtValue("") == #""""#)
        #expect(FileLogHandler.logfmtValue("connecting") == "connecting")
    }

    @Test("record --log: logrotate's rename, then SIGUSR1, and the next lines go to a new file; nothing stops",
          .waitingForChildren)
    func reopenOnSIGUSR1() async throws {
        try await withStation(StationConfiguration(metaint: 8000, trackSeconds: 2, pace: .realtime)) { station in
            let folder = try AirtapBinary.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let log = folder.appendingPathComponent("airtap.log")
            let rotated = folder.appendingPathComponent("airtap.log.1")
            // --for only bounds a run the test fails to stop: the test stops it itself, and on a
            // starved machine the two titles it waits for may take minutes of wall time.
            let record = try AirtapChild(["record", station.streamURL, "--for", "9m", "--out", folder.appendingPathComponent("out").path,
                                          "--log", log.path, "--no-silence-search"])
            defer { if record.process.isRunning { record.process.terminate() } }
            func lines(_ url: URL) -> [String] {
                ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            }
            try await waitFor("a title in the log") { lines(log).contains { $0.contains("msg=\"title: ") } }
            // Every line is logfmt: time, level, ..., msg last.
            for line in lines(log) {
                #expect(line.hasPrefix("time=") && line.contains(" level=") && line.contains(" msg="), "\(line)")
            }
            try FileManager.default.moveItem(at: log, to: rotated)
            kill(record.process.processIdentifier, SIGUSR1)
            try await waitFor("a title in the reopened log") { lines(log).contains { $0.contains("msg=\"title: ") } }
            #expect(record.process.isRunning)
            #expect(lines(rotated).allSatisfy { $0.hasPrefix("time=") })
            #expect(try await record.terminate() == 0)
            #expect(lines(log).contains { $0.contains("stopped: stopped by user") })
        }
    }
}
