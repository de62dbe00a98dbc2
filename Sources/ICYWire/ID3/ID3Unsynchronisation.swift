/// ID3v2's unsynchronisation (ID3v2.4 structure, section 6.1): a writer puts 0x00 after every
/// 0xFF that could look like an MPEG sync, and a reader drops it again. v2.3 applies it to the
/// whole tag body, v2.4 per frame.
package enum ID3Unsynchronisation {
    /// `bytes` with every 0x00 that follows a 0xFF removed. The result is never longer than
    /// the input, so a bounded tag bounds it.
    @inlinable
    package static func removed(from bytes: some Sequence<UInt8>) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.underestimatedCount)
        var previous: UInt8 = 0
        for byte in bytes {
            if !(previous == 0xFF && byte == 0x00) { result.append(byte) }
            previous = byte
        }
        return result
    }
}
