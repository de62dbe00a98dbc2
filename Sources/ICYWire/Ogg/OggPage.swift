/// One Ogg page (RFC 3533): a 27-byte header, a segment table of up to 255 lacing values,
/// and a body of their sum (at most 255 * 255 bytes). Every size is bounded by the format
/// itself: a page is never longer than `maxLength`.
///
/// Pure Swift rather than libogg: ICYWire stays free of C and I/O, a page is ~30 lines to
/// check, and the framer can then be drip-fed and fuzzed like the MP3 one.
package struct OggPage: Sendable {
    package struct Flags: OptionSet, Sendable, Hashable {
        package let rawValue: UInt8
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The first packet on this page continues one from the previous page.
        package static let continued = Flags(rawValue: 1)
        /// Beginning of a logical stream: in a chained stream, the start of a new link.
        package static let beginningOfStream = Flags(rawValue: 2)
        package static let endOfStream = Flags(rawValue: 4)
    }

    package static let headerLength = 27
    package static let maxLength = headerLength + 255 + 255 * 255
    static let capturePattern: [UInt8] = Array("OggS".utf8)

    /// The whole page, header included; a slice of the parser's input.
    package let bytes: ArraySlice<UInt8>
    package let flags: Flags
    /// Codec-defined position after the last packet that ends here; -1 when none ends here.
    package let granulePosition: Int64
    package let serialNumber: UInt32
    package let sequenceNumber: UInt32

    package var segmentCount: Int { Int(bytes[bytes.startIndex + 26]) }
    package var lacingValues: ArraySlice<UInt8> {
        let start = bytes.startIndex + Self.headerLength
        return bytes[start..<(start + segmentCount)]
    }
    package var body: ArraySlice<UInt8> { bytes[(bytes.startIndex + Self.headerLength + segmentCount)...] }
    package var isBeginningOfStream: Bool { flags.contains(.beginningOfStream) }
    package var isEndOfStream: Bool { flags.contains(.endOfStream) }

    package enum ParseResult: Sendable {
        case page(OggPage)
        /// The bytes so far are a valid beginning; at least this many bytes are needed in all.
        case needMore(Int)
        /// Not a page here (no capture pattern, a bad version or a CRC mismatch): resync.
        case invalid
    }

    /// Reads the page at the start of `bytes`.
    package static func parse(_ bytes: ArraySlice<UInt8>) -> ParseResult {
        let start = bytes.startIndex
        let prefix = min(bytes.count, 4)
        guard bytes.prefix(prefix).elementsEqual(capturePattern.prefix(prefix)) else { return .invalid }
        guard bytes.count >= headerLength else { return .needMore(headerLength) }
        guard bytes[start + 4] == 0, bytes[start + 5] & ~0x07 == 0 else { return .invalid }
        let segments = Int(bytes[start + 26])
        guard bytes.count >= headerLength + segments else { return .needMore(headerLength + segments) }
        let tableStart = start + headerLength
        let bodyLength = bytes[tableStart..<(tableStart + segments)].reduce(0) { $0 + Int($1) }
        let length = headerLength + segments + bodyLength
        guard bytes.count >= length else { return .needMore(length) }
        let page = bytes[start..<(start + length)]
        guard OggCRC.checksum(page, skippingCRCField: true) == readUInt32LE(page, at: 22) else { return .invalid }
        return .page(OggPage(
            bytes: page, flags: Flags(rawValue: page[start + 5]),
            granulePosition: Int64(bitPattern: readUInt64LE(page, at: 6)),
            serialNumber: readUInt32LE(page, at: 14), sequenceNumber: readUInt32LE(page, at: 18)))
    }

    /// The packet pieces on this page in order: each with whether it ends here (a lacing value
    /// below 255) or goes on to the next page.
    package var packetPieces: [(bytes: ArraySlice<UInt8>, isComplete: Bool)] {
        var pieces: [(bytes: ArraySlice<UInt8>, isComplete: Bool)] = []
        var offset = body.startIndex
        var pieceStart = offset
        for value in lacingValues {
            offset += Int(value)
            if value < 255 {
                pieces.append((body[pieceStart..<offset], true))
                pieceStart = offset
            }
        }
        if pieceStart < offset || lacingValues.last == 255 { pieces.append((body[pieceStart..<offset], false)) }
        return pieces
    }

    /// A page built from its fields (for re-paginating headers and renumbering pages), CRC set.
    /// `lacing` must describe `body`; at most 255 values.
    package static func build(flags: Flags, granulePosition: Int64, serialNumber: UInt32, sequenceNumber: UInt32,
                             lacing: [UInt8], body: some Collection<UInt8>) -> [UInt8] {
        var page = capturePattern
        page.reserveCapacity(headerLength + lacing.count + body.count)
        page.append(0)
        page.append(flags.rawValue)
        appendLE(UInt64(bitPattern: granulePosition), bytes: 8, to: &page)
        appendLE(UInt64(serialNumber), bytes: 4, to: &page)
        appendLE(UInt64(sequenceNumber), bytes: 4, to: &page)
        appendLE(0, bytes: 4, to: &page)
        page.append(UInt8(lacing.count))
        page.append(contentsOf: lacing)
        page.append(contentsOf: body)
        let crc = OggCRC.checksum(page[...], skippingCRCField: true)
        for index in 0..<4 { page[22 + index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
        return page
    }

    /// This page with a new sequence number (and its CRC recomputed): pages after re-paginated
    /// headers, or the pages of a link written to its own file.
    package func renumbered(to sequenceNumber: UInt32, flags newFlags: Flags? = nil) -> [UInt8] {
        Self.build(flags: newFlags ?? flags, granulePosition: granulePosition, serialNumber: serialNumber,
                   sequenceNumber: sequenceNumber, lacing: Array(lacingValues), body: body)
    }
}

/// Lays packets out on pages: 255-byte segments, at most 255 segments a page, a packet that
/// does not fit continued on the next page. Used for the rewritten header pages of a link.
enum OggPaginator {
    /// Pages holding `packets` in order, each page ending where a packet ends if it can;
    /// `granulePosition` goes on every page (headers use 0).
    package static func pages(for packets: [[UInt8]], serialNumber: UInt32, firstSequenceNumber: UInt32,
                             firstFlags: OggPage.Flags, granulePosition: Int64) -> [[UInt8]] {
        var pages: [[UInt8]] = []
        var lacing: [UInt8] = []
        var body: [UInt8] = []
        var continued = false
        func flush(endsPacket: Bool) {
            var flags: OggPage.Flags = pages.isEmpty ? firstFlags : []
            if continued { flags.insert(.continued) }
            pages.append(OggPage.build(flags: flags, granulePosition: endsPacket ? granulePosition : -1,
                                       serialNumber: serialNumber, sequenceNumber: firstSequenceNumber + UInt32(pages.count),
                                       lacing: lacing, body: body))
            lacing.removeAll(keepingCapacity: true)
            body.removeAll(keepingCapacity: true)
            continued = !endsPacket
        }
        for packet in packets {
            var remaining = packet[...]
            while true {
                if lacing.count == 255 { flush(endsPacket: false) }
                let count = min(255, remaining.count)
                lacing.append(UInt8(count))
                body.append(contentsOf: remaining.prefix(count))
                remaining = remaining.dropFirst(count)
                if count < 255 { break }
            }
        }
        if !lacing.isEmpty { flush(endsPacket: true) }
        return pages
    }
}

/// The CRC-32 of Ogg: polynomial 0x04C11DB7, not reflected, initial value 0.
enum OggCRC {
    static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index) << 24
        for _ in 0..<8 { value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1 }
        return value
    }

    /// Over the whole page, with bytes 22..<26 (the CRC field) counted as zero when asked.
    static func checksum(_ page: ArraySlice<UInt8>, skippingCRCField: Bool) -> UInt32 {
        var crc: UInt32 = 0
        var offset = 0
        for byte in page {
            let value = skippingCRCField && (22..<26).contains(offset) ? 0 : byte
            crc = (crc << 8) ^ table[Int((crc >> 24) ^ UInt32(value))]
            offset += 1
        }
        return crc
    }
}

func readUInt32LE(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt32 {
    let start = bytes.startIndex + offset
    return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[start + $1]) << (8 * UInt32($1)) }
}

func readUInt64LE(_ bytes: ArraySlice<UInt8>, at offset: Int) -> UInt64 {
    let start = bytes.startIndex + offset
    return (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[start + $1]) << (8 * UInt64($1)) }
}

func appendLE(_ value: UInt64, bytes count: Int, to output: inout [UInt8]) {
    for index in 0..<count { output.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
}
