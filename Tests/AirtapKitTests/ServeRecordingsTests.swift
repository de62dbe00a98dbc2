import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// `airtap serve --library`: the `/recordings` page and the files it plays.
@Suite("serve --library: the recordings page and its files")
struct ServeRecordingsTests {
    /// A library of a few tracks recorded from the test station into `folder/out`.
    static func recordLibrary(in folder: URL) async throws -> (library: String, out: URL, entries: [LibraryEntry]) {
        let server = try await TestStationServer.start(RecordTests.configuration(), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let library = folder.appendingPathComponent("library.sqlite").path
        let out = folder.appendingPathComponent("out")
        let result = try await AirtapBinary.run(["record", server.streamURL, "--retries", "0", "--out", out.path, "--library", library])
        #expect(result.status == 0, "\(result.stderr)")
        let entries = try LibraryIndex(path: library).list()
        return (library, out, entries)
    }

    static func fetch(_ port: Int, _ path: String, method: String = "GET", headers: [(String, String)] = []) async throws -> StationClient.Response {
        try await StationClient.fetch(port: port, path: path, method: method, headers: headers, timeout: .seconds(30))
    }

    /// The entry ids on a page, in its order.
    static func ids(_ html: String) -> [Int64] {
        html.components(separatedBy: #"<li class="recording" data-id=""#).dropFirst().compactMap { Int64($0.prefix { $0.isNumber }) }
    }

    @Test("The page lists what it may play newest first, no server path, and the search narrows it; a file's range comes back 206 with exactly those bytes; files outside the library's folders, links out of them and unknown ids are 404 and not listed",
          .waitingForChildren)
    func pageAndFiles() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (library, out, recorded) = try await Self.recordLibrary(in: folder)
        #expect(recorded.count >= 3, "\(recorded.map(\.path))")
        guard let inside = recorded.first(where: { $0.isComplete }) ?? recorded.first else { return }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: inside.path))
        #expect(bytes.count > 2000)

        // Indexed by hand: a copy outside the recordings folder, a link inside it to that copy,
        // and a copy inside it titled with markup. All newer than every recording.
        let outside = folder.appendingPathComponent("elsewhere/secret.mp3")
        try FileManager.default.createDirectory(at: outside.deletingLastPathComponent(), withIntermediateDirectories: true)
        try bytes.write(to: outside)
        let link = out.appendingPathComponent("link.mp3")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: outside)
        let copied = out.appendingPathComponent("copied.mp3")
        try bytes.write(to: copied)
        let index = try LibraryIndex(path: library)
        for (path, title, later) in [(outside.path, "Hidden secret", 3600.0), (link.path, "Linked <b>out</b>", 3600),
                                     (copied.path, "<script>alert(1)</script> & \"friends\"", 1800)] {
            _ = try index.add(LibraryEntry(path: path, stationName: "Crafted", title: title, startedAt: Date().addingTimeInterval(later),
                                           seconds: 10, codec: "MP3"), dedupe: false)
        }
        let all = try index.list()
        let crafted = all.filter { $0.stationName == "Crafted" && $0.path != copied.path }
        #expect(crafted.count == 2)
        let served = all.filter { $0.stationName != "Crafted" || $0.path == copied.path }

        try await withStation(ServeStationsTests.realtime()) { station in
            let serve = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0", "--library", library, "--out", out.path])
            defer { if serve.process.isRunning { serve.process.terminate() } }
            let port = try await serve.listeningPort()

            // Newest first: the index's order, less what the page would not play; the copy inside on top.
            let page = try await Self.fetch(port, "/recordings")
            #expect(page.status == 200, "\(page.head)")
            #expect(page.header("content-type") == "text/html; charset=utf-8")
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(Self.ids(html) == served.map(\.id), "\(Self.ids(html)) vs \(served.map(\.id))")
            #expect(Self.ids(html).first == served.first { $0.path == copied.path }?.id)
            // Nothing of the entries it will not serve, and no path on the server.
            #expect(!html.contains("Hidden secret") && !html.contains("Linked") && !html.contains("secret.mp3"), "\(html)")
            #expect(!html.contains(folder.path) && !html.contains(out.path), "\(html)")
            let starts = all.map(\.startedAt)
            #expect(zip(starts, starts.dropFirst()).allSatisfy { $0 >= $1 })
            // What came from the index is text, not markup.
            #expect(!html.contains("<script>") && !html.contains("<b>out"), "\(html)")
            #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;friends&quot;"))
            #expect(html.contains("Guns N&#39; Roses - Sweet Child o&#39; Mine"))
            #expect(html.components(separatedBy: "<audio ").count - 1 == served.count)

            // The search: any case, over title, artist and station.
            let guns = try await Self.fetch(port, "/recordings?q=GUNS+n%27")
            let found = Self.ids(String(decoding: guns.body, as: UTF8.self))
            let expected = all.filter { $0.displayTitle.lowercased().contains("guns n'") }.map(\.id)
            #expect(!expected.isEmpty && found == expected, "\(found) vs \(expected)")
            #expect(found.count < all.count)
            let byStation = Self.ids(String(decoding: try await Self.fetch(port, "/recordings?q=crafted").body, as: UTF8.self))
            #expect(byStation == Array(Self.ids(html).prefix(1)))
            let echoed = String(decoding: try await Self.fetch(port, "/recordings?q=%22%3E%3Cscript%3E").body, as: UTF8.self)
            #expect(echoed.contains(#"value="&quot;&gt;&lt;script&gt;""#) && !echoed.contains("\"><script>"))

            // A range: exactly those bytes.
            let file = "/recordings/file/\(inside.id)"
            let range = try await Self.fetch(port, file, headers: [("Range", "bytes=100-1099")])
            #expect(range.status == 206, "\(range.head)")
            #expect(range.header("content-range") == "bytes 100-1099/\(bytes.count)")
            #expect(range.header("content-length") == "1000")
            #expect(range.header("content-type") == "audio/mpeg")
            #expect(range.body == Array(bytes[100..<1100]))
            let tail = try await Self.fetch(port, file, headers: [("Range", "bytes=-10")])
            #expect(tail.status == 206 && tail.body == Array(bytes.suffix(10)), "\(tail.head)")
            let whole = try await Self.fetch(port, file)
            #expect(whole.status == 200 && whole.header("accept-ranges") == "bytes")
            #expect(whole.body == Array(bytes))
            let head = try await Self.fetch(port, file, method: "HEAD")
            #expect(head.status == 200 && head.header("content-length") == "\(bytes.count)" && head.body.isEmpty, "\(head.head)")
            let beyond = try await Self.fetch(port, file, headers: [("Range", "bytes=\(bytes.count)-")])
            #expect(beyond.status == 416 && beyond.header("content-range") == "bytes */\(bytes.count)", "\(beyond.head)")

            // Only indexed files inside the recordings folder: not a copy elsewhere, not a link out, not an unknown id, never a path.
            for id in crafted.map(\.id) {
                let refused = try await Self.fetch(port, "/recordings/file/\(id)")
                #expect(refused.status == 404, "entry \(id): \(refused.head)")
                #expect(!refused.body.starts(with: Array(bytes.prefix(100))))
            }
            let unknown = (all.map(\.id).max() ?? 0) + 1000
            for path in ["/recordings/file/\(unknown)", "/recordings/file/-1", "/recordings/file/../../library.sqlite",
                         "/recordings/file/" + outside.path, "/recordings/file/1%2F..%2F..%2Fetc%2Fpasswd"] {
                let refused = try await Self.fetch(port, path)
                #expect(refused.status == 404, "\(path): \(refused.head)")
            }
            #expect(try await serve.terminate() == 0)

            // Without a library there is no page.
            let plain = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0"])
            defer { if plain.process.isRunning { plain.process.terminate() } }
            let plainPort = try await plain.listeningPort()
            #expect(try await Self.fetch(plainPort, "/recordings").status == 404)
            #expect(try await Self.fetch(plainPort, "/recordings/file/\(inside.id)").status == 404)
            #expect(try await plain.terminate() == 0)
        }
    }

    @Test("serve --record with the library on: /recordings lists what it records, and plays it", .waitingForChildren)
    func recordingServe() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = try await TestStationServer.start(RecordTests.configuration(maxSeconds: nil, pace: .realtime), program: RecordTests.program)
        defer { Task { try? await server.stop() } }
        let library = folder.appendingPathComponent("library.sqlite").path
        let serve = try AirtapChild(serving: [server.streamURL, "--listen", "127.0.0.1:0", "--record", "--out",
                                     folder.appendingPathComponent("out").path, "--library", library])
        defer { if serve.process.isRunning { serve.process.terminate() } }
        let port = try await serve.listeningPort()
        var ids: [Int64] = []
        try await waitFor("a recorded track on /recordings", seconds: 90, every: .milliseconds(100)) {
            ids = Self.ids(String(decoding: try await Self.fetch(port, "/recordings").body, as: UTF8.self))
            return !ids.isEmpty
        }
        let entry = try LibraryIndex(path: library).entry(id: ids[0])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: try #require(entry).path))
        let file = try await Self.fetch(port, "/recordings/file/\(ids[0])", headers: [("Range", "bytes=0-99")])
        #expect(file.status == 206 && file.body == Array(bytes.prefix(100)), "\(file.head)")
        #expect(try await serve.terminate() == 0)
    }

    @Test("The page in headless Chromium: the first recording's player loads its file's metadata",
          .enabled(if: ServeStationsTests.chromium != nil, "chromium is not installed (tools/install-deps installs it)"),
          .waitingForChildren)
    func pageInBrowser() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (library, out, recorded) = try await Self.recordLibrary(in: folder)
        #expect(!recorded.isEmpty)
        try await withStation(ServeStationsTests.realtime()) { station in
            let serve = try AirtapChild(serving: [station.streamURL, "--listen", "127.0.0.1:0", "--library", library, "--out", out.path])
            defer { if serve.process.isRunning { serve.process.terminate() } }
            let port = try await serve.listeningPort()
            let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-recordings-page.png")
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("tools/browser/page-check.py")
            let reportFile = folder.appendingPathComponent("report.json")
            _ = FileManager.default.createFile(atPath: reportFile.path, contents: nil)
            let browser = Process()
            browser.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            // At most 90 s for the metadata: the check ends as soon as it has it.
            browser.arguments = ["python3", script.path, "--recordings", "http://127.0.0.1:\(port)/recordings", "90", screenshot.path]
            browser.standardOutput = try FileHandle(forWritingTo: reportFile)
            browser.standardError = FileHandle.nullDevice
            try ChildProcesses.run(browser)
            defer { ChildProcesses.terminate(browser) }
            // Polled, not waitUntilExit: a blocked cooperative thread would stall the other tests.
            while browser.isRunning { try await Task.sleep(for: .milliseconds(100)) }
            let data = try Data(contentsOf: reportFile)
            let report = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            let errors = report?["errors"] as? [String] ?? ["no report: \(String(decoding: data, as: UTF8.self))"]
            #expect(errors.isEmpty, "\(errors)")
            #expect(report?["recordings"] as? Int == recorded.count)
            #expect(report?["firstTitle"] as? String == recorded.first?.displayTitle)
            let samples = report?["samples"] as? [[String: Any]] ?? []
            let loaded = samples.contains { ($0["readyState"] as? Int ?? 0) >= 1 || ($0["duration"] as? Double ?? 0) > 0 }
            #expect(loaded, "the first player never loaded metadata: \(samples.suffix(3))")
            #expect(samples.allSatisfy { $0["audioError"] is NSNull || $0["audioError"] == nil }, "\(samples.suffix(3))")
            print("recordings page screenshot: \(screenshot.path)")
            #expect(try await serve.terminate() == 0)
        }
    }
}
