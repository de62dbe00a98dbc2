import AirtapKit
import AirtapTestSupport
import Foundation
import ICYWire
@testable import TestStation
import Testing

/// A source that sends each file as it is (ezstream and many playout systems): LAME's Info frame at
/// every track start. It is metadata about a file, not audio: recordings and relays hold none.
@Suite("Source Info frames")
struct InfoFrameTests {
    static let tracks = [(title: "A - One", frames: 0..<90), (title: "B - Two", frames: 90..<180), (title: "C - Three", frames: 180..<270)]

    /// A LAME-style Info frame for the stream's format, with made-up counts.
    static func infoFrame() throws -> [UInt8] {
        let xing = try #require(XingFrame(matching: HostileStreamTests.frame(0).prefix(4)))
        return xing.render(frameCount: 1234, byteCount: 567_890, isConstantBitrate: true)
    }

    /// Each track: its title in the metadata block before it, then an Info frame, then its audio.
    static func body() throws -> (body: [UInt8], audio: [UInt8]) {
        let info = try infoFrame()
        var stream: [UInt8] = [], audio: [UInt8] = []
        var blocks: [Int: [UInt8]] = [:]
        for track in tracks {
            // The title goes in the block at the first metaint boundary at or after the Info frame.
            blocks[(stream.count + 1999) / 2000 - 1] = HostileStreamTests.titleBlock(track.title)
            let frames = HostileStreamTests.frames(track.frames)
            stream += info + frames
            audio += frames
        }
        blocks[-1] = nil
        return (HostileStreamTests.interleave(stream, metaint: 2000, blocks: blocks), audio)
    }

    static func isInfo(_ frame: [UInt8]) -> Bool {
        guard let header = frame.withUnsafeBytes({ AudioFrameHeader(at: $0, offset: 0) }) else { return false }
        return EncoderInfoFrame.isInfoFrame(frame[...], header: header)
    }

    @Test("The recogniser: LAME's Info and Xing frames (and one with a CRC) yes, audio frames and ADTS no")
    func recogniser() throws {
        #expect(Self.isInfo(try Self.infoFrame()))
        let xing = try #require(XingFrame(matching: HostileStreamTests.frame(0).prefix(4)))
        #expect(Self.isInfo(xing.render(frameCount: 1, byteCount: 2, isConstantBitrate: false)))
        #expect((0..<300).allSatisfy { !Self.isInfo(HostileStreamTests.frame($0)) })
        let adts: [UInt8] = [0xFF, 0xF1, 0x50, 0x80, 0x02, 0x1F, 0xFC] + Array("InfoXingVBRI".utf8) + [UInt8](repeating: 0, count: 60)
        #expect(!Self.isInfo(adts))
    }

    @Test("record and relay --to FILE: every audio frame once, no Info frame from the source (only airtap's own at a file's start)")
    func recordingsAndRelaysHoldNone() async throws {
        let (body, audio) = try Self.body()
        let head = ScriptedServer.head("HTTP/1.0 200 OK", ["Content-Type: audio/mpeg", "icy-name: Playout", "icy-metaint: 2000"])
        let server = try await ScriptedServer.start { _ in [.send(head), .send(body), .wait(seconds: 0.1), .close] }
        defer { Task { try? await server.stop() } }
        let folder = try AirtapBinary.temporaryFolder()
        let record = try await AirtapBinary.run(["record", server.url("/"), "--retries", "0", "--out", folder.path, "--no-silence-search"])
        #expect(record.status == 0, "\(record.stderr)")
        let recorded = try HostileStreamTests.recordedAudio(folder)
        #expect(recorded.audio == audio)
        // RecordedFileContents takes airtap's own Xing frame off the front; none may remain.
        #expect(recorded.files.allSatisfy { !$0.frames.contains(where: Self.isInfo) })
        #expect(recorded.files.allSatisfy { $0.xingCounts?.frames == $0.frames.count })

        let relayed = folder.appendingPathComponent("relay.mp3").path
        let relay = try await AirtapBinary.run(["relay", server.url("/"), "--to", relayed, "--retries", "0"])
        #expect(relay.status == 0, "\(relay.stderr)")
        let contents = try RecordedFileContents(path: relayed)
        #expect(!contents.frames.contains(where: Self.isInfo))
        #expect(contents.audio == audio)
    }
}
