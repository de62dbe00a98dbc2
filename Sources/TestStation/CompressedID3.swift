/// ID3v2 tags with zlib-compressed frames, built byte by byte (FoundationEssentials has no zlib),
/// for the hostile-tag tests: a real compressed frame that libid3tag inflates, and a bomb
/// whose small wire size inflates to many MiB.
enum CompressedID3 {
    /// An ID3v2.4 tag with one compressed text frame (`id`, UTF-8) whose text is `prefix`
    /// followed by `runCount` copies of `run`; the frame declares the inflated size
    /// (data length indicator), as the standard requires.
    /// `declared` overrides the inflated size the frame declares (a lie either way).
    package static func textTag(id: String = "TIT2", prefix: String = "", run: UInt8 = UInt8(ascii: "A"), runCount: Int,
                               declared: Int? = nil) -> [UInt8] {
        let inflated = [0x03] + Array(prefix.utf8)  // text encoding byte: UTF-8
        let stream = zlib(literals: inflated, run: run, runCount: runCount)
        let data = syncsafe(declared ?? (inflated.count + runCount)) + stream
        // Frame header: id, syncsafe size, status flags, format flags (compression + data length indicator).
        let frame = Array(id.utf8.prefix(4)) + syncsafe(data.count) + [0x00, 0x09] + data
        return Array("ID3".utf8) + [4, 0, 0] + syncsafe(frame.count) + frame
    }

    /// The same as ID3v2.3: Latin-1 text, plain 32-bit sizes, the inflated size as the first four
    /// bytes of the data (compression flag 0x80); with `unsynchronised`, the whole body is
    /// unsynchronised (0x00 after every 0xFF that a 0x00 or a sync-like byte follows).
    package static func textTagV23(id: String = "TIT2", prefix: String = "", run: UInt8 = UInt8(ascii: "A"), runCount: Int,
                                  declared: Int? = nil, unsynchronised: Bool = false) -> [UInt8] {
        let inflated = [0x00] + Array(prefix.utf8)  // text encoding byte: Latin-1
        let stream = zlib(literals: inflated, run: run, runCount: runCount)
        let data = bigEndian(declared ?? (inflated.count + runCount)) + stream
        var body = Array(id.utf8.prefix(4)) + bigEndian(data.count) + [0x00, 0x80] + data
        if unsynchronised {
            var escaped: [UInt8] = []
            for (index, byte) in body.enumerated() {
                escaped.append(byte)
                let next = index + 1 < body.count ? body[index + 1] : 0
                if byte == 0xFF && (next == 0 || next >= 0xE0) { escaped.append(0) }
            }
            body = escaped
        }
        return Array("ID3".utf8) + [3, 0, unsynchronised ? 0x80 : 0] + syncsafe(body.count) + body
    }

    /// A zlib stream (RFC 1950) of `literals` then `runCount` copies of `run`: one deflate block
    /// with the fixed Huffman codes (RFC 1951), the run as length-258, distance-1 matches
    /// (13 bits per 258 bytes: 64 MiB of text in about 420 KB).
    package static func zlib(literals: [UInt8], run: UInt8, runCount: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.write(1, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE 01: fixed Huffman codes
        for byte in literals { bits.writeLiteral(byte) }
        var remaining = runCount
        if remaining > 0 {
            bits.writeLiteral(run)
            remaining -= 1
        }
        while remaining >= 258 {
            bits.writeCode(0b1100_0101, length: 8)  // length symbol 285: 258 bytes
            bits.writeCode(0, length: 5)  // distance symbol 0: 1 byte back
            remaining -= 258
        }
        for _ in 0..<remaining { bits.writeLiteral(run) }
        bits.writeCode(0, length: 7)  // end of block (symbol 256)
        let checksum = adler32(literals: literals, run: run, runCount: runCount)
        return [0x78, 0x01] + bits.finished + [UInt8(checksum >> 24), UInt8((checksum >> 16) & 0xFF), UInt8((checksum >> 8) & 0xFF), UInt8(checksum & 0xFF)]
    }

    package static func syncsafe(_ value: Int) -> [UInt8] {
        [UInt8((value >> 21) & 0x7F), UInt8((value >> 14) & 0x7F), UInt8((value >> 7) & 0x7F), UInt8(value & 0x7F)]
    }

    static func bigEndian(_ value: Int) -> [UInt8] {
        [UInt8((value >> 24) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// Adler-32 of the inflated bytes, the run in closed form (no 64 MiB loop).
    static func adler32(literals: [UInt8], run: UInt8, runCount: Int) -> UInt32 {
        let modulus = 65521
        var a = 1, b = 0
        for byte in literals {
            a = (a + Int(byte)) % modulus
            b = (b + a) % modulus
        }
        // After k more bytes of value r: a_k = a + k·r, and b gains Σ a_j = n·a + r·n(n+1)/2.
        let n = runCount, r = Int(run)
        b = (b + (n % modulus) * a % modulus + r * ((n * (n + 1) / 2) % modulus)) % modulus
        a = (a + (n % modulus) * r) % modulus
        return UInt32(b << 16 | a)
    }
}

/// Deflate's bit order: fields LSB first, Huffman codes MSB first.
private struct BitWriter {
    private var bytes: [UInt8] = []
    private var current: UInt8 = 0
    private var used = 0

    mutating func write(_ value: Int, count: Int) {
        for bit in 0..<count { append((value >> bit) & 1) }
    }

    mutating func writeCode(_ code: Int, length: Int) {
        for bit in stride(from: length - 1, through: 0, by: -1) { append((code >> bit) & 1) }
    }

    /// Fixed codes: 0–143 are 8 bits from 0x30, 144–255 are 9 bits from 0x190.
    mutating func writeLiteral(_ byte: UInt8) {
        if byte < 144 {
            writeCode(0x30 + Int(byte), length: 8)
        } else {
            writeCode(0x190 + Int(byte) - 144, length: 9)
        }
    }

    private mutating func append(_ bit: Int) {
        current |= UInt8(bit) << used
        used += 1
        if used == 8 {
            bytes.append(current)
            current = 0
            used = 0
        }
    }

    /// The bytes with the last partial byte flushed.
    var finished: [UInt8] { used > 0 ? bytes + [current] : bytes }
}
