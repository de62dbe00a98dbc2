import AudioDecoding
import Foundation
import ICYWire
import OggDecoding
import TestStation
import Testing

/// libvorbis behind the decoder interface, fed pages of a tone ffmpeg's libvorbis encodes, and
/// the same stream with an identification header libvorbis refuses (a station's, so a stranger's).
@Suite("VorbisDecoder")
struct VorbisDecoderTests {
    /// A second of a 440 Hz sine as Ogg Vorbis pages.
    static func pages() throws -> [[UInt8]] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-vorbis-\(UUID().uuidString).ogg")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error",
                             "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=1",
                             "-c:a", "libvorbis", "-f", "ogg", "-y", output.path]
        try ChildProcesses.spawn(process)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        let bytes = try [UInt8](Data(contentsOf: output))
        var pages: [[UInt8]] = []
        var position = 0
        while position < bytes.count {
            guard case .page(let page) = OggPage.parse(bytes[position...]) else { Issue.record("not a page at \(position)"); break }
            pages.append(Array(page.bytes))
            position += page.bytes.count
        }
        return pages
    }

    /// The first page (the identification header alone) with one byte of its packet replaced, CRC mended.
    static func withIdentificationByte(_ offset: Int, _ value: UInt8, in pages: [[UInt8]]) throws -> [[UInt8]] {
        guard case .page(let first) = OggPage.parse(pages[0][...]) else { throw DecoderError(.malformed, "no first page") }
        var body = Array(first.body)
        body[offset] = value
        var changed = pages
        changed[0] = OggPage.build(flags: first.flags, granulePosition: first.granulePosition, serialNumber: first.serialNumber,
                                   sequenceNumber: first.sequenceNumber, lacing: Array(first.lacingValues), body: body)
        return changed
    }

    /// Decodes `pages` in order: the samples out and the errors thrown.
    static func decode(_ pages: [[UInt8]], with decoder: VorbisDecoder) -> (samples: Int, errors: [DecoderError]) {
        var samples = 0
        var errors: [DecoderError] = []
        for page in pages {
            do {
                try page.withUnsafeBytes { raw in
                    try decoder.decode(raw) { _, pcm in samples += pcm.count }
                }
            } catch let error as DecoderError {
                errors.append(error)
            } catch {
                Issue.record("not a decoder's error: \(error)")
            }
        }
        return (samples, errors)
    }

    @Test("A header libvorbis refuses (huge block sizes, a version not 0) is a typed error, and the next link decodes")
    func aRefusedHeaderIsAnErrorNotATrap() throws {
        let pages = try Self.pages()
        let decoder = try VorbisDecoder()
        let whole = Self.decode(pages, with: decoder)
        #expect(whole.errors.isEmpty)
        #expect(whole.samples > 40000, "a second of audio: \(whole.samples)")
        // Identification header: 0x01 "vorbis", version (4) at 7, channels (1), rate (4),
        // three bitrates (12), block sizes (1) at 28.
        for (offset, value) in [(28, UInt8(0xFF)), (7, UInt8(1))] {
            let hostile = try Self.withIdentificationByte(offset, value, in: pages)
            let refused = Self.decode(hostile, with: decoder)
            #expect(refused.errors.map(\.kind) == [.malformed], "byte \(offset) = \(value)")
            #expect(refused.samples == 0)
            let next = Self.decode(pages, with: decoder)
            #expect(next.errors.isEmpty)
            #expect(next.samples == whole.samples, "after byte \(offset) = \(value)")
        }
    }
}
