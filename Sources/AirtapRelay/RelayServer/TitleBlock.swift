import NIOCore

/// One title as an ICY metadata block on the wire, rendered once per title change and shared
/// (the same `ByteBuffer` storage) by every listener that asked for metadata.
struct TitleBlock {
    /// Grows with each change: a listener compares ids, not bytes, to know what it last sent.
    let id: Int
    /// Length byte, then `StreamTitle='…';` (and `StreamUrl='…';`), NUL-padded to a multiple of 16.
    let bytes: ByteBuffer

    /// Before the station named anything: a block that says nothing.
    static let none = TitleBlock(id: 0, bytes: noChange)

    /// The one-byte block (length 0) that means "no change".
    static let noChange = ByteBuffer(bytes: [0])

    /// The largest payload a length byte can announce.
    static let maxPayload = 255 * 16

    /// Raw UTF-8, quotes and semicolons unescaped, as stations send them (ICY has no escaping).
    /// A title too long for the block is cut at a character boundary.
    static func render(title: String, url: String?, allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        let suffix = url.map { "StreamUrl='\(oneLine($0))';" } ?? ""
        let fixed = "StreamTitle='';".utf8.count + suffix.utf8.count
        let title = oneLine(title)
        var kept = String.UnicodeScalarView()
        var keptBytes = 0
        for scalar in title.unicodeScalars {
            let size = scalar.utf8.count
            guard fixed + keptBytes + size <= maxPayload else { break }
            keptBytes += size
            kept.append(scalar)
        }
        let text = "StreamTitle='\(String(kept))';" + (fixed + keptBytes <= maxPayload ? suffix : "")
        let payloadLength = min(text.utf8.count, maxPayload)
        let blocks = (payloadLength + 15) / 16
        var buffer = allocator.buffer(capacity: 1 + blocks * 16)
        buffer.writeInteger(UInt8(blocks))
        buffer.writeBytes(text.utf8.prefix(payloadLength))
        buffer.writeRepeatingByte(0, count: blocks * 16 - payloadLength)
        return buffer
    }

    /// A NUL would end the value early in some clients' parsers; CR/LF have no business there.
    private static func oneLine(_ text: String) -> String {
        String(text.unicodeScalars.map { $0 == "\0" || $0 == "\r" || $0 == "\n" ? " " : Character($0) })
    }
}
