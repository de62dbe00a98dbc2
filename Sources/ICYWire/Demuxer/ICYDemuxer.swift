/// One ICY metadata block, as sent: the length byte's worth of bytes, NUL padding included.
public struct MetadataBlock: Sendable, Hashable {
    public let bytes: [UInt8]
    /// Audio bytes that came before it in the stream.
    public let position: Int

    public init(bytes: [UInt8], position: Int) {
        self.bytes = bytes
        self.position = position
    }
}

/// Splits an ICY body into audio and metadata blocks.
///
/// With `icy-metaint: N` the server sends N audio bytes, one length byte L, then L × 16
/// bytes of metadata, and again. L = 0 means "no change" and yields no block.
public struct ICYDemuxer: Sendable {
    public enum State: Sendable, Hashable {
        /// Audio bytes left before the next length byte (`Int.max` and constant when passing through).
        case audio(remaining: Int)
        case lengthByte
        case metadata(remaining: Int)
    }

    /// Test convenience output, adjacent audio merged.
    public enum Output: Sendable, Hashable {
        case audio([UInt8])
        case metadata(MetadataBlock)
    }

    public let metaint: Int?
    public private(set) var state: State
    /// Audio bytes passed on so far.
    public private(set) var audioPosition = 0
    private var pendingBlock: [UInt8] = []

    /// `nil` or a non-positive interval: no metadata, everything is audio.
    public init(metaint: Int?) {
        if let metaint, metaint > 0 {
            self.metaint = metaint
            self.state = .audio(remaining: metaint)
        } else {
            self.metaint = nil
            self.state = .audio(remaining: .max)
        }
    }

    /// Audio is handed on as slices of `chunk` (no copy); a block split across chunks is
    /// collected and delivered whole.
    public mutating func consume(
        _ chunk: UnsafeRawBufferPointer,
        onAudio: (UnsafeRawBufferPointer) -> Void,
        onMetadata: (MetadataBlock) -> Void
    ) {
        guard let metaint else {
            audioPosition += chunk.count
            if !chunk.isEmpty { onAudio(chunk) }
            return
        }
        var index = 0
        while index < chunk.count {
            switch state {
            case .audio(let remaining):
                let count = min(remaining, chunk.count - index)
                onAudio(UnsafeRawBufferPointer(rebasing: chunk[index..<(index + count)]))
                audioPosition += count
                index += count
                state = count == remaining ? .lengthByte : .audio(remaining: remaining - count)
            case .lengthByte:
                let length = Int(chunk[index]) * 16
                index += 1
                if length == 0 {
                    state = .audio(remaining: metaint)
                } else {
                    pendingBlock.reserveCapacity(length)
                    state = .metadata(remaining: length)
                }
            case .metadata(let remaining):
                let count = min(remaining, chunk.count - index)
                pendingBlock.append(contentsOf: chunk[index..<(index + count)])
                index += count
                if count == remaining {
                    onMetadata(MetadataBlock(bytes: pendingBlock, position: audioPosition))
                    pendingBlock = []
                    state = .audio(remaining: metaint)
                } else {
                    state = .metadata(remaining: remaining - count)
                }
            }
        }
    }

    public mutating func consume(_ chunk: [UInt8]) -> [Output] {
        var outputs: [Output] = []
        chunk.withUnsafeBytes { raw in
            consume(raw, onAudio: { audio in
                if case .audio(let previous) = outputs.last {
                    outputs[outputs.count - 1] = .audio(previous + audio)
                } else {
                    outputs.append(.audio(Array(audio)))
                }
            }, onMetadata: { outputs.append(.metadata($0)) })
        }
        return outputs
    }
}
