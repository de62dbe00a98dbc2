import Foundation
import ICYWire
import TestStation

/// One short program shared by the tests: encoding is the slow part of starting a station.
enum Fixtures {
    /// 1-second tracks keep the loop small (about 4 s, 66 KB) while still having several titles.
    static let configuration = StationConfiguration(metaint: 1000, trackSeconds: 1, pace: .fast)
    static let program = Result { () throws(StationError) in try StationProgram(configuration: configuration) }
}

/// Splits an ICY stream into audio and metadata payloads (NUL padding kept), by hand, as the
/// protocol says: `metaint` audio bytes, a length byte, 16 × length bytes of metadata, repeat.
func demux(_ bytes: [UInt8], metaint: Int) -> (audio: [UInt8], blocks: [[UInt8]], trailingGarbage: Bool) {
    var audio: [UInt8] = []
    var blocks: [[UInt8]] = []
    var position = 0
    while position < bytes.count {
        let audioEnd = min(bytes.count, position + metaint)
        audio += bytes[position..<audioEnd]
        position = audioEnd
        guard position < bytes.count else { break }
        let length = Int(bytes[position]) * 16
        position += 1
        guard position + length <= bytes.count else { return (audio, blocks, true) }
        blocks.append(Array(bytes[position..<position + length]))
        position += length
    }
    return (audio, blocks, false)
}

/// The StreamTitle of a non-empty metadata payload, assuming the station's own layout
/// (`StreamTitle='…';StreamUrl='…';` + NULs); the title may itself contain `'` and `;`.
func streamTitle(_ payload: [UInt8]) -> String? {
    let text = String(decoding: payload.prefix { $0 != 0 }, as: UTF8.self)
    let prefix = "StreamTitle='"
    guard text.hasPrefix(prefix), let end = text.range(of: "';StreamUrl='", options: .backwards) else { return nil }
    return String(text[text.index(text.startIndex, offsetBy: prefix.count)..<end.lowerBound])
}

/// Frame lengths of `bytes` if it is nothing but whole valid MPEG frames, else nil.
func wholeFrames(_ bytes: some RandomAccessCollection<UInt8>) -> [MP3FrameHeader]? {
    var headers: [MP3FrameHeader] = []
    var position = bytes.startIndex
    while position != bytes.endIndex {
        guard let header = MP3FrameHeader(bytes[position...]),
              bytes.distance(from: position, to: bytes.endIndex) >= header.frameLength else { return nil }
        headers.append(header)
        position = bytes.index(position, offsetBy: header.frameLength)
    }
    return headers
}

