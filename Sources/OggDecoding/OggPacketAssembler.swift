import AudioDecoding
import ICYWire

/// Joins the packet pieces of consecutive Ogg pages into whole codec packets. A packet larger
/// than `maxPacketBytes` (a lie: real audio packets are a few kB) is dropped, never buffered.
struct OggPacketAssembler {
    static let maxPacketBytes = 1 << 20
    private var partial: [UInt8] = []
    /// A continued piece at the start of the stream, or after an oversized packet: drop it.
    private var isDiscarding = false

    mutating func reset() {
        partial.removeAll()
        isDiscarding = false
    }

    /// Calls `body` with each packet the page completes, in order.
    mutating func packets(in page: OggPage, _ body: (UnsafeMutableBufferPointer<UInt8>) throws(DecoderError) -> Void) throws(DecoderError) {
        var pieces = page.packetPieces[...]
        if !page.flags.contains(.continued) {
            partial.removeAll(keepingCapacity: true)
            isDiscarding = false
        } else if partial.isEmpty {
            // Joined in the middle of a packet: its start is gone.
            isDiscarding = true
        }
        while let piece = pieces.popFirst() {
            if !isDiscarding {
                if partial.count + piece.bytes.count > Self.maxPacketBytes {
                    partial.removeAll()
                    isDiscarding = true
                } else {
                    partial.append(contentsOf: piece.bytes)
                }
            }
            guard piece.isComplete else { continue }
            defer { partial.removeAll(keepingCapacity: true) }
            if isDiscarding {
                isDiscarding = false
                continue
            }
            var failure: DecoderError?
            partial.withUnsafeMutableBufferPointer { buffer in
                do throws(DecoderError) { try body(buffer) } catch { failure = error }
            }
            if let failure { throw failure }
        }
    }
}

/// The page in a packet handed to a decoder, or nil for bytes that are not one whole page.
func oggPage(in bytes: UnsafeRawBufferPointer) -> OggPage? {
    guard case .page(let page) = OggPage.parse(Array(bytes)[...]) else { return nil }
    return page
}
