#if canImport(Glibc)
import Glibc
#endif
@testable import AirtapRecording
import Foundation
import ICYWire
import Testing

/// The held-back tail a recorder writes past its appends each second: only what is not on disk
/// already is written again.
@Suite("The held-back tail")
struct HeldBackTailTests {
    /// Five 418-byte frames of one network read, as the framer slices them.
    static let read = [UInt8](repeating: 0x55, count: 5 * 418)
    static let header = AudioFrameHeader.mpeg(MP3FrameHeader(0xFF, 0xFB, 0x92, 0x44)!)
    static let frames = (0..<5).map { Packet(bytes: read[($0 * 418)..<(($0 + 1) * 418)], position: $0 * 418, header: header) }

    func onDisk(_ packets: [Packet], previous: [Packet], end: Int, rewritesBytes: Bool = false) -> Int {
        // The last tail (the previous packets) was written at 1000, right after the appends then.
        let stop = 1000 + previous.reduce(0) { $0 + $1.bytes.count }
        return TrackFile.packetsOnDisk(of: packets, previous: TrackFile.contiguousSpan(of: previous), from: 1000, to: off_t(stop), end: off_t(end),
                                       rewritesBytes: rewritesBytes)
    }

    @Test("The packets of the last tail past the appends, as long as the new tail repeats them, are not written again")
    func whatIsOnDiskIsKept() {
        let f = Self.frames
        // Two of the four appended since: the new tail starts with the other two, then a new one.
        #expect(onDisk([f[2], f[3], f[4]], previous: [f[0], f[1], f[2], f[3]], end: 1000 + 2 * 418) == 2)
        // Nothing appended since: all four are there.
        #expect(onDisk([f[0], f[1], f[2], f[3], f[4]], previous: [f[0], f[1], f[2], f[3]], end: 1000) == 4)
        // All of it appended: nothing of it is left past the appends.
        #expect(onDisk([f[4]], previous: [f[0], f[1], f[2], f[3]], end: 1000 + 4 * 418) == 0)
    }

    @Test("Anything else writes the whole tail: appends that end inside a packet, another packet in its place, a padding copy in the appends or in the last tail, an Ogg comment rewrite, no last tail")
    func anythingElseIsWrittenAgain() {
        let f = Self.frames
        #expect(onDisk([f[2], f[3]], previous: [f[0], f[1], f[2], f[3]], end: 1000 + 2 * 418 + 1) == 0)
        #expect(onDisk([f[2], f[4]], previous: [f[0], f[1], f[2], f[3]], end: 1000 + 2 * 418) == 1)
        // Appends with a padding copy among them (the stream byte at the end is not where it
        // would be), and a last tail with one: neither says what is on disk.
        #expect(onDisk([f[2], f[3]], previous: [f[0], f[1], f[2], f[3]], end: 1000 + 3 * 418) == 0)
        #expect(onDisk([f[2], f[3]], previous: [f[0], f[1], f[1], f[2], f[3]], end: 1000 + 3 * 418) == 0)
        #expect(onDisk([f[2], f[3]], previous: [f[0], f[1], f[2], f[3]], end: 1000 + 2 * 418, rewritesBytes: true) == 0)
        #expect(onDisk([f[2], f[3]], previous: [], end: 1000) == 0)
    }

    /// Five 418-byte frames whose bytes differ (no frame header: the file reserves nothing).
    static let distinct = (0..<5 * 418).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    static let distinctFrames = (0..<5).map { Packet(bytes: distinct[($0 * 418)..<(($0 + 1) * 418)], position: $0 * 418, header: header) }

    /// A part file in a scratch folder, and its bytes once `body` abandoned it.
    func withPartFile(_ body: (TrackFile, String) throws -> Void) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("heldback-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/track.mp3.part"
        let file = try #require(try TrackFile(partPath: path, first: Self.distinctFrames[0], reservesTagSpace: false))
        try body(file, path)
        file.abandon()
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test("Appends of what the last tail put on disk are not written again: the bytes there stay as the tail left them")
    func appendsOfTheTailAreNotWrittenAgain() throws {
        let f = Self.distinctFrames
        let bytes = try withPartFile { file, path in
            try file.append(f[0])
            try file.writeHeldBack([f[1], f[2], f[3]])
            // An append that wrote its packet again would overwrite the mark.
            mark(path, bytes: 418..<3 * 418)
            try file.append(f[1])
            try file.append(f[2])
            try file.writeAppends()
        }
        #expect(bytes.count == 3 * 418, "the rest of the tail is cut at the end")
        #expect(Array(bytes[..<418]) == Array(f[0].bytes))
        #expect(bytes[418..<3 * 418].allSatisfy { $0 == 0xEE })
    }

    @Test("Appends that go on past the tail, a flush at a time: what the tail holds is skipped, the rest written, and the file is the stream")
    func appendsPastTheTail() throws {
        let f = Self.distinctFrames
        let bytes = try withPartFile { file, path in
            try file.append(f[0])
            try file.writeHeldBack([f[1], f[2], f[3]])
            mark(path, bytes: 2 * 418..<4 * 418)
            try file.append(f[1])
            try file.writeAppends()
            try file.append(f[2])
            try file.append(f[3])
            try file.append(f[4])
        }
        #expect(bytes.count == 5 * 418)
        #expect(Array(bytes[..<(2 * 418)]) == Array(f[0].bytes) + Array(f[1].bytes))
        #expect(bytes[(2 * 418)..<(4 * 418)].allSatisfy { $0 == 0xEE }, "the tail's f2 and f3 are not written again")
        #expect(Array(bytes[(4 * 418)...]) == Array(f[4].bytes))
    }

    @Test("The file is the appended stream whatever the appends do after a tail: part of it, a packet copied again, another numbering at the tail's place")
    func theFileIsTheAppends() throws {
        let f = Self.distinctFrames
        let copied = try withPartFile { file, _ in
            try file.append(f[0])
            try file.writeHeldBack([f[1], f[2], f[3]])
            try file.append(f[1])
            try file.writeHeldBack([f[2], f[3], f[4]])
            for packet in [f[2], f[3], f[3], f[4]] { try file.append(packet) }
        }
        expectSame(copied, [f[0], f[1], f[2], f[3], f[3], f[4]])
        // After a packet from before the appends' end, one at the tail's stream position is not its bytes.
        let other = Packet(bytes: Self.read[0..<418], position: 0, header: Self.header)
        let atTheTailsPlace = Packet(bytes: Self.read[418..<836], position: 3 * 418, header: Self.header)
        let renumbered = try withPartFile { file, _ in
            try file.append(f[0])
            try file.writeHeldBack([f[1], f[2], f[3], f[4]])
            try file.append(f[1])
            try file.append(other)
            try file.writeAppends()
            try file.append(atTheTailsPlace)
        }
        expectSame(renumbered, [f[0], f[1], other, atTheTailsPlace])
    }

    /// Overwrites `bytes` of the file at `path` with 0xEE, behind the track file's back: the
    /// tail's place on disk, which appends of what the tail holds must leave alone.
    func mark(_ path: String, bytes: Range<Int>, sourceLocation: SourceLocation = #_sourceLocation) {
        let descriptor = open(path, O_WRONLY)
        defer { close(descriptor) }
        let written = pwrite(descriptor, [UInt8](repeating: 0xEE, count: bytes.count), bytes.count, off_t(bytes.lowerBound))
        #expect(written == bytes.count, sourceLocation: sourceLocation)
    }

    func expectSame(_ bytes: [UInt8], _ packets: [Packet], sourceLocation: SourceLocation = #_sourceLocation) {
        let expected = packets.flatMap { Array($0.bytes) }
        let firstDifference = (0..<min(bytes.count, expected.count)).first { bytes[$0] != expected[$0] }
        #expect(bytes == expected, "\(bytes.count) bytes, \(expected.count) expected, first difference at \(firstDifference.map(String.init) ?? "the shorter one's end")",
                sourceLocation: sourceLocation)
    }
}
