/// Splits input whole, byte by byte and at random, for drip-feed checks.
package enum Splits {
    package static func all(_ input: [UInt8], randomCount: Int = 20, seed: UInt64 = 0xA1_27A9) -> [[[UInt8]]] {
        var result: [[[UInt8]]] = [[input], input.map { [$0] }]
        var generator = SplitMix64(seed: seed)
        for round in 0..<randomCount {
            // Small maxima drip, large maxima look like network reads; empty chunks included.
            let maxChunk = [3, 17, 500, 5000][round % 4]
            var chunks: [[UInt8]] = []
            var offset = 0
            while offset < input.count {
                let size = Int(generator.next() % UInt64(maxChunk + 1))
                let end = min(offset + size, input.count)
                chunks.append(Array(input[offset..<end]))
                offset = end
            }
            result.append(chunks)
        }
        return result
    }
}
