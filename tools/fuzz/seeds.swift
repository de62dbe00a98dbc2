// Writes a small seed corpus for each fuzz target: `seeds OUTPUT_DIR`.
// Standalone (no ICYWire), so the seeds do not depend on the code under test.
import Foundation

let output = URL(fileURLWithPath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "seeds")

func write(_ target: String, _ name: String, _ bytes: [UInt8]) {
    let folder = output.appendingPathComponent(target)
    try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try! Data(bytes).write(to: folder.appendingPathComponent(name))
}

func payload(_ count: Int, seed: Int) -> [UInt8] {
    (0..<count).map { UInt8(($0 &* 7 &+ seed &* 13) % 255) }
}

/// MPEG-1 Layer III 128 kbps 44.1 kHz (417 bytes, 418 padded), joint stereo.
func mp3Frame(padded: Bool, seed: Int) -> [UInt8] {
    [0xFF, 0xFB, 0x90 | (padded ? 0x02 : 0), 0x40] + payload(padded ? 414 : 413, seed: seed)
}

/// MPEG-2 Layer III 64 kbps 22.05 kHz: 208 bytes.
func mpeg2Frame(seed: Int) -> [UInt8] {
    [0xFF, 0xF3, 0x80, 0xC0] + payload(204, seed: seed)
}

/// AAC LC 44.1 kHz stereo, no CRC.
func adtsFrame(length: Int, seed: Int) -> [UInt8] {
    [0xFF, 0xF1, 0x50, 0x80 | UInt8(length >> 11), UInt8((length >> 3) & 0xFF), UInt8((length & 7) << 5) | 0x1F, 0xFC]
        + payload(length - 7, seed: seed)
}

func id3Tag(body: Int) -> [UInt8] {
    [0x49, 0x44, 0x33, 4, 0, 0, 0, 0, UInt8(body >> 7), UInt8(body & 0x7F)]
        + Array("TIT2".utf8) + [0, 0, 0, 5, 0, 0, 3] + Array("test".utf8) + [UInt8](repeating: 0, count: max(0, body - 15))
}

func mp3Frames(_ count: Int) -> [UInt8] {
    (0..<count).flatMap { mp3Frame(padded: $0 % 3 == 2, seed: $0) }
}

func icy(_ audio: [UInt8], metaint: Int, titles: [String?]) -> [UInt8] {
    var stream: [UInt8] = []
    var offset = 0
    var index = 0
    while offset < audio.count {
        let end = min(audio.count, offset + metaint)
        stream += audio[offset..<end]
        offset = end
        if end - offset == 0 && end % metaint == 0 {
            if let title = titles[index % titles.count] {
                var block = Array("StreamTitle='\(title)';StreamUrl='';".utf8)
                block += [UInt8](repeating: 0, count: (16 - block.count % 16) % 16)
                stream.append(UInt8(block.count / 16))
                stream += block
            } else {
                stream.append(0)
            }
            index += 1
        }
    }
    return stream
}

let titles = ["Artist - Title", "It's a 'quote'; here", "", "../../etc/passwd", "Caf\u{E9} \u{2013} \u{1F3B5}"]

// demuxer: [metaint selector][split seed: 2][stream]
write("demuxer", "plain", [0, 0, 1] + mp3Frames(3))
write("demuxer", "metaint-16", [16, 0, 7] + icy(mp3Frames(2), metaint: 16, titles: [nil, "A - B"]))
write("demuxer", "metaint-200", [200, 1, 0] + icy(mp3Frames(4), metaint: 200, titles: titles.map { $0 }))
write("demuxer", "huge-block", [8, 0, 3] + [UInt8](repeating: 0x41, count: 8) + [255] + [UInt8](repeating: 0x42, count: 4080) + [0x43, 0x44])

// metadata: [charset selector][block]
for (index, title) in titles.enumerated() {
    write("metadata", "title-\(index)", [UInt8(index)] + Array("StreamTitle='\(title)';StreamUrl='http://example.com/';".utf8) + [0, 0, 0])
}
write("metadata", "cp1252", [2] + Array("StreamTitle='Caf".utf8) + [0xE9, 0x20, 0x96, 0x20, 0x80] + Array("';".utf8))
write("metadata", "cp1251", [3] + Array("StreamTitle='".utf8) + [0xC0, 0xE1, 0xE2, 0x20, 0x2D, 0x20, 0xFF] + Array("';".utf8))
write("metadata", "unquoted", [0] + Array("StreamTitle=No quotes;Other=1;;='x';bad".utf8))

// framer: [maxTagLength selector][split seed: 2][stream]
write("framer", "mp3", [0, 0, 1] + mp3Frames(5))
write("framer", "garbage-tag-mp3", [0, 0, 2] + Array("garbage".utf8) + mp3Frames(3) + id3Tag(body: 40) + mp3Frames(3) + [0xFF, 0xFB, 0x90])
write("framer", "oversized-tag", [3, 0, 3] + mp3Frames(2) + id3Tag(body: 200) + mp3Frames(3))
write("framer", "mpeg2", [0, 0, 4] + (0..<4).flatMap { mpeg2Frame(seed: $0) })
write("framer", "adts", [0, 0, 5] + (0..<4).flatMap { adtsFrame(length: 180 + $0 * 3, seed: $0) } + Array("ID3".utf8))
write("framer", "truncated", [0, 0, 6] + mp3Frames(2) + Array(mp3Frame(padded: false, seed: 9).prefix(200)) + mp3Frames(3))

// headers: [offset][bytes]
write("headers", "mp3", [0] + mp3Frame(padded: true, seed: 1))
write("headers", "xing", [0] + [0xFF, 0xFB, 0x90, 0x40] + [UInt8](repeating: 0, count: 32) + Array("Xing".utf8) + [UInt8](repeating: 0, count: 400))
write("headers", "adts", [1, 0] + adtsFrame(length: 100, seed: 1))
write("headers", "id3", [0] + id3Tag(body: 20))
write("headers", "id3-footer", [2, 0, 0] + [0x49, 0x44, 0x33, 4, 0, 0x10, 0, 0, 0, 20])

// response_head: text, first line the status line
write("response_head", "shoutcast", Array("ICY 200 OK\r\nicy-notice1: <BR>This stream requires Winamp<BR>\r\nicy-name: Groove Salad\r\nicy-genre: Ambient\r\nicy-url: http://somafm.com\r\ncontent-type: audio/mpeg\r\nicy-pub: 1\r\nicy-metaint: 45000\r\nicy-br: 128,128\r\n\r\n".utf8))
write("response_head", "icecast", Array("HTTP/1.1 200 OK\nContent-Type: audio/aacp; charset=x\nice-public: 0\nicy-metaint: 0\nServer: Icecast 2.4.4\n folded\n: empty\n".utf8))
write("response_head", "error", Array("HTTP/1.0 404 Not Found\nContent-Type: text/html\n".utf8))

// playlist: [format selector][text]
write("playlist", "pls", [0] + Array("[playlist]\nNumberOfEntries=2\nFile2=http://b.example/stream\nFile1=http://a.example:8000/\nTitle1=x\nVersion=2\n".utf8))
write("playlist", "m3u", [5] + Array("\u{FEFF}#EXTM3U\r\n#EXTINF:-1,Station\r\nstream.mp3\r\n../up/x?y=1#z\r\n//other.host/s\r\nhttp://abs.example/\r\n".utf8))
write("playlist", "hls", [2] + Array("#EXTM3U\n#EXT-X-TARGETDURATION:10\nseg1.ts\n".utf8))

// framer, "built" mode: [0x80 | maxTagLength selector][split seed: 2][format][recipe...]
write("framer", "built-mp3", [0x80, 0, 9, 0] + [1, 2, 3, 0x21, 11, 4, 5, 13, 6, 7, 0x5C, 8, 9, 10])
write("framer", "built-adts", [0x81, 0, 3, 0x10] + [1, 2, 12, 3, 4, 14, 5, 6])
write("framer", "built-layer2", [0x80, 1, 1, 0x23] + [1, 1, 2, 2, 11, 3, 3])

// id3: [mode] + a whole tag (even mode) or a stream holding tags (odd mode). Compressed frames
// use a zlib stored block (no deflate encoder here); the "bomb" seeds declare far more than
// they carry, which is what the inflation check refuses.
func syncsafe(_ value: Int) -> [UInt8] {
    [UInt8((value >> 21) & 0x7F), UInt8((value >> 14) & 0x7F), UInt8((value >> 7) & 0x7F), UInt8(value & 0x7F)]
}

func adler32(_ bytes: [UInt8]) -> [UInt8] {
    var a = 1, b = 0
    for byte in bytes { a = (a + Int(byte)) % 65521; b = (b + a) % 65521 }
    return [UInt8(b >> 8), UInt8(b & 0xFF), UInt8(a >> 8), UInt8(a & 0xFF)]
}

func storedZlib(_ bytes: [UInt8]) -> [UInt8] {
    let length = bytes.count
    return [0x78, 0x01, 0x01, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
        + bytes + adler32(bytes)
}

/// ID3v2.4 with one text frame, compressed (and declaring `declared` inflated bytes) or not.
func id3v24(_ text: String, compressed: Bool, declared: Int? = nil) -> [UInt8] {
    let body: [UInt8] = [3] + Array(text.utf8)
    let data = compressed ? syncsafe(declared ?? body.count) + storedZlib(body) : body
    let frame = Array("TIT2".utf8) + syncsafe(data.count) + [0, compressed ? 0x09 : 0] + data
    return [0x49, 0x44, 0x33, 4, 0, 0] + syncsafe(frame.count) + frame
}

/// ID3v2.3 with one text frame (Latin-1), compressed with a plain 4-byte inflated size.
func id3v23(_ text: String, declared: Int? = nil, unsynchronised: Bool = false) -> [UInt8] {
    let body: [UInt8] = [0] + Array(text.utf8)
    let count = declared ?? body.count
    let data = [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)] + storedZlib(body)
    let size = data.count
    let frame = Array("TIT2".utf8) + [UInt8(size >> 24), UInt8((size >> 16) & 0xFF), UInt8((size >> 8) & 0xFF), UInt8(size & 0xFF)] + [0, 0x80] + data
    return [0x49, 0x44, 0x33, 3, 0, unsynchronised ? 0x80 : 0] + syncsafe(frame.count) + frame
}

write("id3", "plain", [0] + id3v24("Artist - Title", compressed: false))
write("id3", "compressed", [0] + id3v24("Compressed title", compressed: true))
write("id3", "bomb-declared", [0] + id3v24("Bomb", compressed: true, declared: 64 << 20))
write("id3", "v23-compressed", [0] + id3v23("Old tag"))
write("id3", "v23-bomb", [0] + id3v23("Old bomb", declared: 1 << 30, unsynchronised: true))
write("id3", "in-stream", [1] + mp3Frames(2) + id3v24("In stream", compressed: true) + mp3Frames(3))

// hls_playlist: [base and limits selector][text]
write("hls_playlist", "master", [0] + Array("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS=\"mp4a.40.5\"\nlow.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS=\"mp4a.40.2,avc1.4d401e\",RESOLUTION=640x360\nhigh.m3u8\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"en\",URI=\"a.m3u8\"\n".utf8))
write("hls_playlist", "live", [1] + Array("#EXTM3U\r\n#EXT-X-TARGETDURATION:6\r\n#EXT-X-MEDIA-SEQUENCE:4711\r\n#EXT-X-PROGRAM-DATE-TIME:2026-11-26T12:00:00.500+01:00\r\n#EXTINF:6.0,title=\"T \\\"q\\\"\",artist=\"A\"\r\ns1.aac\r\n#EXT-X-DISCONTINUITY\r\n#EXTINF:6,Artist - Title\r\ns2.aac\r\n".utf8))
write("hls_playlist", "vod-keys", [0x82] + Array("#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MAP:URI=\"init.mp4\",BYTERANGE=\"700@0\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\",IV=0x0102\n#EXTINF:4,\n#EXT-X-BYTERANGE:100@5\nf1.m4s\n#EXT-X-KEY:METHOD=NONE\n#EXTINF:4,\n#EXT-X-BYTERANGE:100\nf2.m4s\n#EXT-X-ENDLIST\n".utf8))

// mpegts: [PES bound selector][split seed: 2][stream]: PAT, PMT (AAC 0x100, ID3 0x101), PES.
func tsPacket(pid: Int, start: Bool, counter: Int, payload: [UInt8]) -> [UInt8] {
    let header: [UInt8] = [0x47, UInt8(start ? 0x40 : 0) | UInt8(pid >> 8), UInt8(pid & 0xFF)]
    let room = 184 - payload.count
    if room == 0 { return header + [0x10 | UInt8(counter & 0x0F)] + payload }
    let adaptation: [UInt8] = room == 1 ? [0] : [UInt8(room - 1), 0] + [UInt8](repeating: 0xFF, count: room - 2)
    return header + [0x30 | UInt8(counter & 0x0F)] + adaptation + payload
}

func tsSection(tableID: UInt8, body: [UInt8]) -> [UInt8] {
    let length = body.count + 5 + 4
    return [0, tableID, 0xB0 | UInt8(length >> 8), UInt8(length & 0xFF), 0, 1, 0xC1, 0, 0] + body + [0, 0, 0, 0]
}

func pes(streamID: UInt8, pts: UInt64, payload: [UInt8]) -> [UInt8] {
    let ptsBytes: [UInt8] = [0x21 | UInt8((pts >> 29) & 0x0E), UInt8((pts >> 22) & 0xFF), UInt8((pts >> 14) & 0xFE) | 1,
                             UInt8((pts >> 7) & 0xFF), UInt8((pts << 1) & 0xFE) | 1]
    let length = 3 + ptsBytes.count + payload.count
    return [0, 0, 1, streamID, UInt8(length >> 8), UInt8(length & 0xFF), 0x80, 0x80, 5] + ptsBytes + payload
}

func tsPackets(pid: Int, _ bytes: [UInt8], counter: inout Int) -> [UInt8] {
    var result: [UInt8] = []
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + 184)
        result += tsPacket(pid: pid, start: offset == 0, counter: counter, payload: Array(bytes[offset..<end]))
        counter += 1
        offset = end
    }
    return result
}

var counters = [0, 0, 0, 0]
var transportStream = tsPackets(pid: 0, tsSection(tableID: 0, body: [0, 1, 0xE0, 0x20]), counter: &counters[0])
transportStream += tsPackets(pid: 0x20, tsSection(tableID: 2, body: [0xE1, 0x00, 0xF0, 0x00, 0x0F, 0xE1, 0x00, 0xF0, 0x00, 0x15, 0xE1, 0x01, 0xF0, 0x00]), counter: &counters[1])
transportStream += tsPackets(pid: 0x100, pes(streamID: 0xC0, pts: 126000, payload: (0..<3).flatMap { adtsFrame(length: 150, seed: $0) }), counter: &counters[2])
transportStream += tsPackets(pid: 0x101, pes(streamID: 0xBD, pts: 126000, payload: id3Tag(body: 30)), counter: &counters[3])
transportStream += tsPackets(pid: 0x100, pes(streamID: 0xC0, pts: 135000, payload: (3..<6).flatMap { adtsFrame(length: 150, seed: $0) }), counter: &counters[2])
write("mpegts", "aac-id3", [0, 0, 1] + transportStream)
write("mpegts", "small-bound", [1, 0, 2] + transportStream)
write("mpegts", "garbage", [0, 0, 3] + Array("junk".utf8) + transportStream.prefix(400) + Array("more junk".utf8) + transportStream.dropFirst(400))

// fmp4: [mode][split seed: 2][boxes]: emsg, moof (tfhd default-base-is-moof, tfdt, trun), mdat.
func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
    let size = payload.count + 8
    return [UInt8(size >> 24), UInt8((size >> 16) & 0xFF), UInt8((size >> 8) & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + payload
}

func be32(_ value: Int) -> [UInt8] { [UInt8((value >> 24) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }

let sampleSizes = [20, 30, 25]
func moof(dataOffset: Int) -> [UInt8] {
    box("moof", box("mfhd", [0, 0, 0, 0] + be32(1)) + box("traf",
        box("tfhd", [0, 0x02, 0, 0] + be32(1)) + box("tfdt", [1, 0, 0, 0] + be32(0) + be32(88200))
        + box("trun", [0, 0, 0x03, 0x01] + be32(sampleSizes.count) + be32(dataOffset) + sampleSizes.flatMap { be32(1024) + be32($0) })))
}
let moofLength = moof(dataOffset: 0).count
let fragment = moof(dataOffset: moofLength + 8) + box("mdat", payload(sampleSizes.reduce(0, +), seed: 3))
let emsgBox = box("emsg", [1, 0, 0, 0] + be32(44100) + be32(0) + be32(88200) + be32(0) + be32(7)
    + Array("https://aomedia.org/emsg/ID3".utf8) + [0, 0] + id3Tag(body: 20))
write("fmp4", "fragment", [0x10, 0, 1] + box("styp", Array("msdh".utf8)) + emsgBox + fragment)
write("fmp4", "two-fragments", [0x11, 0, 2] + fragment + box("free", [1, 2, 3]) + fragment)

// timed_id3: [mode][tag]
write("timed_id3", "apple", [0] + [0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 63] + Array("PRIV".utf8) + [0, 0, 0, 53, 0, 0]
    + Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0, 0, 0, 0, 0, 0, 1, 0xB7, 0x74])
write("timed_id3", "titles", [1] + id3Tag(body: 40))

// hls_segment: [mode][split seed: 2][segment]: mode bits 0-1 nil (sniffed), packed audio, MPEG-TS, fMP4.
let packedAudio = id3Tag(body: 40) + (0..<4).flatMap { adtsFrame(length: 120 + $0, seed: $0) }
write("hls_segment", "packed-sniffed", [0, 0, 1] + packedAudio)
write("hls_segment", "packed", [1, 0, 2] + packedAudio)
write("hls_segment", "packed-no-tag", [1, 0, 3] + mp3Frames(3))
write("hls_segment", "ts-sniffed", [0, 0, 4] + transportStream)
write("hls_segment", "ts", [2, 0, 5] + transportStream)
write("hls_segment", "fmp4", [3, 0, 6] + emsgBox + fragment + emsgBox + fragment)
