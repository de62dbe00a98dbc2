import Glibc
import ICYWire

/// Title bytes in any charset glibc's iconv knows (KOI8-R, Shift_JIS, GBK, ISO-8859-2, ...),
/// decoded to UTF-8. Each call opens its own conversion: an `iconv_t` keeps shift state and is
/// not safe to share between threads, and titles arrive a few times a minute, not per packet.
package struct IconvDecoder: LegacyTextDecoder {
    package let charset: String

    /// nil when iconv does not know `charset`.
    package init?(charset: String) {
        guard !charset.isEmpty, !charset.contains("/"), let handle = Self.open(charset) else { return nil }
        iconv_close(handle)
        self.charset = charset
    }

    package func decode(_ bytes: [UInt8]) -> String? {
        guard let handle = Self.open(charset) else { return nil }
        defer { iconv_close(handle) }
        // Metadata blocks are at most 4080 bytes; no charset needs more than 4 UTF-8 bytes per
        // input byte, so this bounds the output by the input (a stranger's size, already bounded).
        var output = [UInt8](repeating: 0, count: bytes.count * 4 + 16)
        var input = bytes.map { CChar(bitPattern: $0) }
        let written: Int? = input.withUnsafeMutableBufferPointer { inputBuffer in
            output.withUnsafeMutableBytes { outputBuffer in
                var inPointer = inputBuffer.baseAddress
                var inLeft = inputBuffer.count
                var outPointer = outputBuffer.baseAddress?.assumingMemoryBound(to: CChar.self)
                var outLeft = outputBuffer.count
                let result = iconv(handle, &inPointer, &inLeft, &outPointer, &outLeft)
                // Bytes that are not text in this charset, or a sequence cut off at the end.
                guard result != -1, inLeft == 0 else { return nil }
                return outputBuffer.count - outLeft
            }
        }
        guard let written else { return nil }
        return String(validating: output[..<written], as: UTF8.self)
    }

    private static func open(_ charset: String) -> iconv_t? {
        let handle = iconv_open("UTF-8", charset)
        // iconv_open reports failure as (iconv_t)-1.
        guard let handle, Int(bitPattern: handle) != -1 else { return nil }
        return handle
    }
}
