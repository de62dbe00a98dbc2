import AirtapTestSupport
import Foundation
import ICYWire
import ID3Tagging
import Locking
import SplitFixtures
@testable import TestStation
import Testing

/// Bodies that break the rules of the stream itself, built from real LAME frames and served by
/// a scripted server: metadata blocks that lie, garbage and tags between frames, evil titles,
/// broken icy-metaint headers, and a reconnect whose burst repeats audio.
@Suite("Hostile streams")
struct HostileStreamTests {
    static let program = Programs.short
    static let frameCount = 300

    /// Frame `index` of the station's endless stream.
    static func frame(_ index: Int) -> [UInt8] {
        let start = program.streamOffset(ofFrame: index)
        return program.audio(from: start, count: program.streamOffset(ofFrame: index + 1) - start)
    }

    static func frames(_ range: Range<Int>) -> [UInt8] { range.flatMap(frame) }

    /// A metadata block: the length byte, then the text padded with NULs to 16-byte units.
    static func block(_ text: [UInt8]) -> [UInt8] {
        let units = (text.count + 15) / 16
        return [UInt8(units)] + text + [UInt8](repeating: 0, count: units * 16 - text.count)
    }

    static func titleBlock(_ title: String) -> [UInt8] { block(Array("StreamTitle='\(title)';".utf8)) }

    /// Audio with a block at every `metaint` boundary: `blocks[k]` at boundary k, else a 0 byte.
    static func interleave(_ audio: [UInt8], metaint: Int, blocks: [Int: [UInt8]]) -> [UInt8] {
        var body: [UInt8] = []
        var offset = 0, boundary = 0
        while offset < audio.count {
            let end = min(audio.count, offset + metaint)
            body += audio[offset..<end]
            // A block follows every whole interval that more audio follows, as servers send it.
            if end - offset == metaint, end < audio.count {
                body += blocks[boundary] ?? [0]
                boundary += 1
            }
            offset = end
        }
        return body
    }

    static func head(metaint: String?) -> [UInt8] {
        ScriptedServer.head("HTTP/1.0 200 OK", ["Content-Type: audio/mpeg", "icy-name: Hostile"] + (metaint.map { ["icy-metaint: \($0)"] } ?? []))
    }

    /// Serves `body` once per connection (then closes), records it with `airtap record`, and
    /// returns the folder and the result.
    static func record(_ body: [UInt8], metaint: String? = "8000", extra: [String] = []) async throws -> (URL, AirtapBinary.Result) {
        let server = try await ScriptedServer.start { _ in [.send(head(metaint: metaint)), .send(body), .wait(seconds: 0.1), .close] }
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let result = try await AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", folder.path] + extra)
        return (folder, result)
    }

    /// Every recorded MP3 below `folder`, in recording order (TRCK), each checked to be whole frames.
    static func recordedAudio(_ folder: URL) throws -> (audio: [UInt8], files: [RecordedFileContents], paths: [String]) {
        let paths = filesBelow(folder).filter { $0.hasSuffix(".mp3") }
        let files = try paths.map { try RecordedFileContents(path: folder.appendingPathComponent($0).path) }
        let order = files.indices.sorted { (Int(files[$0].tag?["TRCK"] ?? "") ?? 0) < (Int(files[$1].tag?["TRCK"] ?? "") ?? 0) }
        for path in paths {
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(path)))
            // Nothing but the tag, the Xing frame and audio frames: the framer skips nothing.
            var framer = AudioFramer()
            let start = ID3v2Header(bytes)?.totalLength ?? 0
            let events = framer.push(Array(bytes[start...])) + framer.finish()
            #expect(framer.skippedByteCount == 0, "\(path) holds bytes that are not frames")
            #expect(!events.contains { if case .id3Tag = $0 { true } else { false } }, "\(path) holds a stray tag")
        }
        return (order.flatMap { files[$0].audio }, order.map { files[$0] }, order.map { paths[$0] })
    }

    @Test("A 4080-byte metadata block (length byte 255) is valid; a 4000-byte title is cut to a safe name")
    func hugeMetadata() async throws {
        let audio = Self.frames(0..<200)
        let long = String(repeating: "Ü", count: 1000) + " - " + String(repeating: "x", count: 1990)
        var text = Array("StreamTitle='\(long)';".utf8)
        text += [UInt8](repeating: 0, count: 4080 - text.count)
        // The next title 1.5 s after the long one: its track is above the track floor.
        let body = Self.interleave(audio, metaint: 8000, blocks: [0: Self.titleBlock("A - One"), 2: [255] + text, 5: Self.titleBlock("B - Two")])
        let (folder, result) = try await Self.record(body)
        #expect(result.status == 0, "\(result.stderr)")
        let recorded = try Self.recordedAudio(folder)
        #expect(recorded.audio == audio)
        #expect(recorded.files.contains { $0.tag?.artist == String(repeating: "Ü", count: 1000) })
        #expect(recorded.paths.allSatisfy { URL(fileURLWithPath: $0).lastPathComponent.utf8.count <= 204 })
    }

    @Test("A metadata block shorter than its length byte: realigned on its real end, no audio lost, every later title found")
    func shortMetadata() async throws {
        let audio = Self.frames(0..<200)
        // Claims 3 × 16 bytes, carries 16: a demuxer that trusted the length byte would eat the
        // next 32 audio bytes as metadata and put every later boundary off by 32 (22 % of the audio lost).
        let lying = [3] + Array("StreamTitle='';".utf8) + [0]
        let blocks = [0: Self.titleBlock("A - One"), 3: lying, 5: Self.titleBlock("B - Two"), 8: Self.titleBlock("C - Three")]
        let body = Self.interleave(audio, metaint: 8000, blocks: blocks)
        let (folder, result) = try await Self.record(body, extra: ["--log-level", "warning"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("shorter than its length byte"), "the realignment is logged: \(result.stderr)")
        let recorded = try Self.recordedAudio(folder)  // checks: nothing but whole frames
        // Every frame written is a frame sent, and (realigned at once) none is lost.
        let sent = Set((0..<200).map(Self.frame))
        let written = recorded.files.flatMap(\.frames)
        #expect(written.allSatisfy { sent.contains($0) }, "a written frame is not a frame sent")
        #expect(written.count * 100 >= 200 * 95, "\(written.count) of 200 frames kept")
        #expect(recorded.audio == audio)
        #expect(recorded.files.contains { $0.tag?.title == "Three" })
    }

    /// A second station at another bitrate: the fallback mount a listener is moved to.
    static let fallbackProgram: StationProgram = {
        do {
            return try StationProgram(configuration: StationConfiguration(bitrate: 192, trackSeconds: 3))
        } catch {
            fatalError("the test station cannot encode its fallback program: \(error)")
        }
    }()

    static func fallbackFrame(_ index: Int) -> [UInt8] {
        let start = fallbackProgram.streamOffset(ofFrame: index)
        return fallbackProgram.audio(from: start, count: fallbackProgram.streamOffset(ofFrame: index + 1) - start)
    }

    /// Main stream cut 150 bytes into frame 60; the fallback joins 100 bytes into its frame 10
    /// (the rest of that frame is longer than the rest of frame 60, so frame 60's length is filled
    /// with the fallback's bytes and only the missing next header gives the stitch away);
    /// back to the main stream 300 bytes into its frame 120.
    static func switchingBody() -> [UInt8] {
        let main = Self.frames(0..<60) + Self.frame(60).prefix(150)
        let fallback = Array(Self.fallbackFrame(10).dropFirst(100)) + (11..<60).flatMap(Self.fallbackFrame) + Self.fallbackFrame(60).prefix(200)
        let back = Array(Self.frame(120).dropFirst(300)) + Self.frames(121..<200)
        return Self.interleave(main + fallback + back, metaint: 8000, blocks: [0: Self.titleBlock("A - One")])
    }

    @Test("relay --to FILE, a stream that switches mid-frame: the file holds whole frames of one stream each")
    func relaySwitchMidFrame() async throws {
        let body = Self.switchingBody()
        let server = try await ScriptedServer.start { _ in [.send(Self.head(metaint: "8000")), .send(body), .wait(seconds: 0.1), .close] }
        defer { Task { try? await server.stop() } }
        let path = try AirtapBinary.temporaryFolder().appendingPathComponent("show.mp3").path
        let result = try await AirtapBinary.run(["relay", server.url("/"), "--retries", "0", "--to", path, "--log-level", "warning"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("dropped 1 audio frame cut short"), "\(result.stderr)")
        let sent = Set((0..<200).map(Self.frame) + (0..<61).map(Self.fallbackFrame))
        let written = try RecordedFileContents(path: path).frames
        #expect(written.allSatisfy { sent.contains($0) }, "a relayed frame is stitched from two streams")
        #expect(written.count == 60 + 49 + 79)
    }

    @Test("A stream that switches mid-frame to another and back (Icecast fallback): no stitched frame is written, the drops are logged")
    func switchMidFrame() async throws {
        let body = Self.switchingBody()
        let (folder, result) = try await Self.record(body, extra: ["--log-level", "warning"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("dropped 1 audio frame cut short"), "the drops are logged: \(result.stderr)")
        let recorded = try Self.recordedAudio(folder)
        let sent = Set((0..<200).map(Self.frame) + (0..<61).map(Self.fallbackFrame))
        let written = recorded.files.flatMap(\.frames)
        #expect(written.allSatisfy { sent.contains($0) }, "a written frame is stitched from two streams")
        // Every whole frame of both streams is kept.
        #expect(written.count == 60 + 49 + 79)
    }

    @Test("A metaint that lies (says 8000, blocks come every 6000): sync losses are logged, every file is clean frames, recording goes on")
    func lyingMetaint() async throws {
        let audio = Self.frames(0..<200)
        let blocks = [0: Self.titleBlock("A - One"), 4: Self.titleBlock("B - Two"), 8: Self.titleBlock("C - Three")]
        let body = Self.interleave(audio, metaint: 6000, blocks: blocks)
        let (folder, result) = try await Self.record(body, extra: ["--log-level", "warning"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("skipped"), "the loss of sync is logged: \(result.stderr)")
        let recorded = try Self.recordedAudio(folder)  // checks: nothing but frames, no stray tag
        // The demuxer cuts "metadata" out of the audio at the wrong places; the framer resyncs
        // after each, so the files hold whole frames only (one torn where a cut fell can still
        // parse: without a CRC nothing can tell it), and most of the audio.
        #expect(recorded.audio.starts(with: audio.prefix(6000 - 418)))
        #expect(recorded.audio.count > audio.count / 2)
    }

    @Test("Garbage between frames and an ID3v2 tag mid-stream never reach a file")
    func garbageAndTags() async throws {
        var generator = SplitMix64(seed: 99)
        // Garbage without a sync byte: a chance 0xFF could pair with a real header and fake a frame.
        let garbage = (0..<333).map { _ in UInt8.random(in: 0...0xFE, using: &generator) }
        let tag = ID3Writer.render(ID3TextFrames([(id: "TIT2", text: "Tagged"), (id: "TPE1", text: "In Stream")]))
        // The frame the garbage follows is dropped too: nothing tells it from a frame another
        // stream cut into.
        let audio = Self.frames(0..<39) + Self.frames(40..<200)
        let dirty = Self.frames(0..<40) + garbage + Self.frames(40..<120) + tag + Self.frames(120..<200)
        let body = Self.interleave(dirty, metaint: 8000, blocks: [0: Self.titleBlock("A - One")])
        let (folder, result) = try await Self.record(body)
        #expect(result.status == 0, "\(result.stderr)")
        let recorded = try Self.recordedAudio(folder)
        #expect(recorded.audio == audio)
        // The tag's title cut the recording where the tag was.
        #expect(recorded.files.contains { $0.tag?.title == "Tagged" && $0.tag?.artist == "In Stream" })
    }

    @Test("Evil titles: traversal, control characters, punctuation only, invalid UTF-8 — all files inside, all named")
    func evilTitles() async throws {
        let titles: [[UInt8]] = [
            Array("../../../../etc/passwd".utf8),
            Array("a\u{01}b\u{07}c\u{1B}[31m - red".utf8),
            Array("'''...'''".utf8),
            [0x42, 0x61, 0x64, 0xC3, 0x28, 0xFF, 0x20, 0x2D, 0x20, 0xE9, 0x74, 0xE9],  // not UTF-8: CP1252
            Array("/".utf8),
        ]
        var blocks: [Int: [UInt8]] = [:]
        for (index, title) in titles.enumerated() {
            // 1.5 s apart: each track is above the track floor, so each title is a file.
            blocks[index * 6] = Self.block(Array("StreamTitle='".utf8) + title + Array("';".utf8))
        }
        let audio = Self.frames(0..<300)
        let (folder, result) = try await Self.record(Self.interleave(audio, metaint: 4000, blocks: blocks), metaint: "4000")
        #expect(result.status == 0, "\(result.stderr)")
        let recorded = try Self.recordedAudio(folder)
        #expect(recorded.audio == audio)
        #expect(recorded.files.count == titles.count)
        for path in recorded.paths {
            #expect(!path.split(separator: "/").contains { $0 == ".." || $0 == "." })
            #expect(!path.unicodeScalars.contains { $0.value < 0x20 })
            #expect(URL(fileURLWithPath: path).lastPathComponent.first != ".")
        }
        #expect(recorded.files.contains { $0.tag?.artist == "Bad\u{C3}(\u{FF}" && $0.tag?.title == "été" })
    }

    @Test("icy-metaint 0, negative, not a number or missing: recorded without titles, one warning when invalid",
          arguments: ["0", "-5", "abc", nil] as [String?])
    func brokenMetaint(value: String?) async throws {
        let audio = Self.frames(0..<120)
        let (folder, result) = try await Self.record(audio, metaint: value, extra: ["--log-level", "warning"])
        #expect(result.status == 0, "\(result.stderr)")
        let recorded = try Self.recordedAudio(folder)
        #expect(recorded.audio == audio)
        let warnings = result.stderr.split(separator: "\n").filter { $0.contains("icy-metaint") }
        #expect(warnings.count == (value == nil ? 0 : 1), "\(result.stderr)")
    }

    @Test("A drop mid-track and a reconnect whose burst repeats audio: one file, no duplicate, no gap")
    func seamlessSplice() async throws {
        let connections = Locked(0)
        let server = try await ScriptedServer.start { _ in
            let number = connections.withLock { value -> Int in
                value += 1
                return value
            }
            // First connection: frames 0..<120, then the server drops it. The second starts
            // with a burst from frame 70, as Icecast does for a new client.
            let audio = number == 1 ? Self.frames(0..<120) : Self.frames(70..<250)
            let body = Self.interleave(audio, metaint: 8000, blocks: [0: Self.titleBlock("A - One")])
            return [.send(Self.head(metaint: "8000")), .send(body), .wait(seconds: 0.1), .close]
        }
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let result = try await AirtapBinary.run(["record", server.url("/"), "--retries", "1", "--out", folder.path, "--log-level", "notice"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(connections.withLock { $0 } == 2)
        #expect(result.stderr.contains("reconnected seamlessly"), "\(result.stderr)")
        let recorded = try Self.recordedAudio(folder)
        #expect(recorded.files.count == 1)
        #expect(recorded.audio == Self.frames(0..<250))
    }
}
