/// ID3v2 tags as HLS packagers write them for timed metadata.
enum TimedID3Fixtures {
    static func syncsafe(_ value: Int) -> [UInt8] {
        [UInt8(value >> 21 & 0x7F), UInt8(value >> 14 & 0x7F), UInt8(value >> 7 & 0x7F), UInt8(value & 0x7F)]
    }

    static func bigEndian32(_ value: Int) -> [UInt8] {
        [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// A v2.4 frame (syncsafe size) or a v2.3 one (plain size).
    static func frame(_ id: String, _ content: [UInt8], version: UInt8 = 4, flags: [UInt8] = [0, 0]) -> [UInt8] {
        Array(id.utf8) + (version == 4 ? syncsafe(content.count) : bigEndian32(content.count)) + flags + content
    }

    static func text(_ id: String, _ value: String, version: UInt8 = 4) -> [UInt8] {
        frame(id, [3] + Array(value.utf8), version: version)
    }

    static func userText(_ description: String, _ value: String) -> [UInt8] {
        frame("TXXX", [3] + Array(description.utf8) + [0] + Array(value.utf8))
    }

    static func transportTimestamp(_ ticks: UInt64) -> [UInt8] {
        frame("PRIV", Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
            + (0..<8).map { UInt8(truncatingIfNeeded: ticks >> (56 - 8 * UInt64($0))) })
    }

    static func tag(_ frames: [[UInt8]], version: UInt8 = 4, flags: UInt8 = 0, padding: Int = 0) -> [UInt8] {
        let body = frames.flatMap { $0 } + [UInt8](repeating: 0, count: padding)
        return Array("ID3".utf8) + [version, 0, flags] + syncsafe(body.count) + body
    }

    static func titleTag(artist: String, title: String, timestamp: UInt64? = nil) -> [UInt8] {
        tag((timestamp.map { [transportTimestamp($0)] } ?? []) + [text("TIT2", title), text("TPE1", artist)])
    }
}
