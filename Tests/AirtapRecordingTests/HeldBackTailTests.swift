#if canImport(Glibc)
import Glibc
#endif
@testable import AirtapRecording
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
}
