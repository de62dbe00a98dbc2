import Testing
@testable import ICYWire

@Suite struct ID3UnsynchronisationTests {
    @Test func dropsTheZeroAfterEveryFF() {
        let written: [UInt8] = [0x01, 0xFF, 0x00, 0xE0, 0xFF, 0x00, 0xFF, 0x00, 0x02]
        #expect(ID3Unsynchronisation.removed(from: written) == [0x01, 0xFF, 0xE0, 0xFF, 0xFF, 0x02])
    }

    @Test func keepsAZeroAfterADroppedZero() {
        // FF 00 00: the writer's 00 goes, the data's 00 (after the dropped one, not after FF) stays.
        #expect(ID3Unsynchronisation.removed(from: [0xFF, 0x00, 0x00] as [UInt8]) == [0xFF, 0x00])
    }

    @Test func keepsATrailingFFAndAZeroNotAfterFF() {
        #expect(ID3Unsynchronisation.removed(from: [0x00, 0x41, 0xFF] as [UInt8]) == [0x00, 0x41, 0xFF])
        #expect(ID3Unsynchronisation.removed(from: [0xFF] as [UInt8]) == [0xFF])
    }

    @Test func emptyInputGivesEmptyOutput() {
        #expect(ID3Unsynchronisation.removed(from: [] as [UInt8]).isEmpty)
    }

    @Test func readsARawBufferSliceAsTheTagCheckDoes() {
        let tag: [UInt8] = [0x49, 0x44, 0x33, 0xFF, 0x00, 0xFB]
        let body = tag.withUnsafeBytes { ID3Unsynchronisation.removed(from: $0[3...]) }
        #expect(body == [0xFF, 0xFB])
    }
}
