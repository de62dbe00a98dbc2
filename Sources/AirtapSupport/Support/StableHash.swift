/// Hashes that name things on disk or pick a machine: the same on every run, machine and Swift
/// version (the standard library's `Hasher` is seeded per process).
package enum StableHash {
    /// 64-bit FNV-1a over the text's UTF-8.
    package static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// Eight lowercase hex digits: FNV-1a folded to 32 bits.
    package static func shortHex(_ text: String) -> String {
        let hash = fnv1a(text)
        let folded = UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
        let digits = String(folded, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
