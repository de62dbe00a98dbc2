import Foundation
import ICYWire

/// What the test station streams: MP3 frames with ICY titles, or a chained Ogg stream (one link
/// per title, its title in the link's comment header, no ICY metadata) as Icecast sends Ogg.
/// Encodes one track's PCM into an Ogg Vorbis or Opus link with ffmpeg (installed with the
/// test dependencies): the station's own tones, so nothing binary is committed.
enum OggTrackEncoder {
    static let ffmpegPath = "/usr/bin/ffmpeg"

    /// The link's pages: BOS and header pages first, the last page EOS; granules from 0.
    static func encode(interleaved pcm: [Int16], sampleRate: Int, channels: Int, bitrate: Int, codec: StationCodec,
                       title: String) throws(StationError) -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("airtap-teststation-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let input = folder.appendingPathComponent("track.pcm")
            let output = folder.appendingPathComponent(codec == .opus ? "track.opus" : "track.ogg")
            try pcm.withUnsafeBytes { Data($0) }.write(to: input)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: ffmpegPath)
            process.arguments = [
                "-nostdin", "-loglevel", "error", "-f", "s16le", "-ar", "\(sampleRate)", "-ac", "\(channels)",
                "-i", input.path, "-c:a", codec == .opus ? "libopus" : "libvorbis", "-b:a", "\(bitrate)k",
            ] + (codec == .opus ? ["-ar", "48000"] : []) + [
                // The title alone (no ARTIST), so the link's title is the station's title as configured.
                "-metadata", "title=\(title)", output.path,
            ]
            process.standardError = FileHandle.nullDevice
            try ChildProcesses.spawn(process)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw StationError.encoding("ffmpeg could not encode \(codec.rawValue) (exit \(process.terminationStatus))")
            }
            return Array(try Data(contentsOf: output))
        } catch let error as StationError {
            throw error
        } catch {
            throw .encoding("ffmpeg: \(error)")
        }
    }

    /// Start of every page of `bytes`, which must be nothing but whole valid pages; and the last
    /// granule position (the link's length in samples at the codec's granule rate).
    static func walkPages(_ bytes: [UInt8], trackIndex: Int) throws(StationError) -> (offsets: [Int], lastGranule: Int64) {
        var offsets: [Int] = []
        var granule: Int64 = 0
        var position = 0
        while position < bytes.count {
            guard case .page(let page) = OggPage.parse(bytes[position...]) else {
                throw .encoding("track \(trackIndex) is not whole Ogg pages at byte \(position)")
            }
            offsets.append(position)
            if page.granulePosition > 0 { granule = page.granulePosition }
            position += page.bytes.count
        }
        return (offsets, granule)
    }
}

extension OggTrackEncoder {
    /// `link` sent `copies` times as links of their own, each with its own serial number (a chain
    /// must not repeat one): a hostile station starting a new link every few pages.
    static func relinked(_ link: [UInt8], copies: Int, trackIndex: Int) throws(StationError) -> [[UInt8]] {
        var pages: [OggPage] = []
        var position = 0
        while position < link.count {
            guard case .page(let page) = OggPage.parse(link[position...]) else {
                throw .encoding("track \(trackIndex) is not whole Ogg pages at byte \(position)")
            }
            pages.append(page)
            position += page.bytes.count
        }
        guard let first = pages.first else { throw .encoding("track \(trackIndex) has no pages") }
        return (0..<copies).map { copy in
            let serial = first.serialNumber &+ UInt32(trackIndex * 100_003 + copy + 1)
            return pages.flatMap { page in
                OggPage.build(flags: page.flags, granulePosition: page.granulePosition, serialNumber: serial,
                              sequenceNumber: page.sequenceNumber, lacing: Array(page.lacingValues), body: page.body)
            }
        }
    }
}
