// Shared by every fuzz target (compiled into each binary with the ICYWire sources).

/// Reports a broken invariant and traps, so libFuzzer saves the input as a crasher.
func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
             file: StaticString = #fileID, line: UInt = #line) {
    if !condition() {
        print("fuzz invariant broken at \(file):\(line): \(message())")
        fatalError(message(), file: file, line: line)
    }
}

/// The fuzzer's bytes, with a few leading bytes taken as parameters.
struct FuzzInput {
    private(set) var bytes: ArraySlice<UInt8>

    init(_ data: UnsafePointer<UInt8>?, _ size: Int) {
        bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size))[...] : []
    }

    /// The next byte as a parameter (0 when the input is exhausted).
    mutating func takeByte() -> UInt8 {
        guard let first = bytes.first else { return 0 }
        bytes = bytes.dropFirst()
        return first
    }

    mutating func takeUInt16() -> UInt16 {
        UInt16(takeByte()) << 8 | UInt16(takeByte())
    }

    var rest: [UInt8] { Array(bytes) }
}

/// Deterministic chunk sizes from a seed: mostly small (1...16), sometimes up to 4 KiB,
/// so a stream is cut everywhere, including inside headers and length bytes.
struct Splitter {
    private var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func chunks<T>(_ bytes: [T]) -> [ArraySlice<T>] {
        var result: [ArraySlice<T>] = []
        var start = 0
        while start < bytes.count {
            let r = next()
            let size: Int
            switch r % 8 {
            case 0: size = 0  // empty pushes must be harmless
            case 1, 2, 3, 4: size = Int((r >> 8) % 4) + 1
            case 5, 6: size = Int((r >> 8) % 64) + 1
            default: size = Int((r >> 8) % 4096) + 1
            }
            let end = min(bytes.count, start + size)
            result.append(bytes[start..<end])
            start = end
        }
        return result
    }
}
