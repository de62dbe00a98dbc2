import Testing
@testable import ICYWire

/// Inputs the fuzz targets of tools/fuzz/ stopped on, kept as plain unit tests. Each test names
/// its target; the bytes are the fuzzer's input minus the target's parameter bytes.
struct FuzzRegressionTests {
    /// response_head: a status line with code 000 and a NUL-laden header. Not a parser bug:
    /// the parser promises three digits, not a range, and callers treat anything outside 2xx
    /// as an error. Kept so the parser keeps accepting it without trapping.
    @Test func responseHeadStatusZeroAndNULs() throws {
        let bytes: [UInt8] = [
            0x49, 0x43, 0x59, 0x20, 0x30, 0x30, 0x30, 0x20, 0x4f, 0x4b, 0x0d, 0x0a, 0x69, 0x2d, 0x79, 0x2d,
            0x6e, 0x6f, 0x74, 0x69, 0x63, 0x53, 0x61, 0x6c, 0x61, 0x64, 0x6d, 0x70, 0x65, 0x67, 0x0d, 0x0a,
            0x69, 0x34, 0x00, 0x00, 0x00, 0x00, 0x3b, 0x0a, 0x69, 0x63, 0x79, 0x2d, 0x62, 0x72, 0x3a, 0x20,
            0x31, 0x22, 0x38, 0x43, 0x6c, 0x6f, 0x73, 0x65, 0x64, 0x52, 0x61,
        ]
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let head = try ResponseHead.parse(statusLine: lines.removeFirst(), headerLines: lines)
        #expect(head.statusCode == 0)
        #expect(head.protocolName == "ICY")
        #expect(head.icyBitrate == 1)
        #expect(head.metaint == .absent)
    }
}
