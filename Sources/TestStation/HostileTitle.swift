import ICYWire

/// Titles as a careless or hostile station sends them: the bytes between the quotes are
/// whatever its source put there. Each title announced gets the next kind of trouble, so a
/// connection sees every kind after `kindCount` changes, whatever the number of tracks; each
/// still holds the track's own title, so every change is a different title.
enum HostileTitle {
    package static let kindCount = 8

    /// The value of `StreamTitle` for `title` with trouble of kind `kind` (modulo `kindCount`;
    /// `url` is sent after it as `StreamUrl`, which the longest kind leaves room for).
    package static func value(of title: String, kind: Int, url: String) -> [UInt8] {
        let text = Array(title.utf8)
        switch kind % kindCount {
        case 0: return text + [0] + Array(" after a NUL".utf8) + [0, 0]
        case 1: return Array("\u{1B}[31m".utf8) + text + Array("\u{1B}[0m".utf8)
        case 2: return Array("\u{1B}]0;window title\u{07}\u{1B}]52;c;Y2xpcA==\u{07}".utf8) + text + Array("\u{07}\u{08}\r\n".utf8)
        case 3: return text + Array(" C1:".utf8) + (0x80...0x9F).map { UInt8($0) }
        case 4: return text + Array(" broken UTF-8:".utf8) + [0xC3, 0x28, 0xFF, 0xFE, 0xED, 0xA0, 0x80, 0xF0, 0x9F]
        case 5: return text + Array("';s Best; Part='2' ';".utf8)
        case 6: return text + (1...0x1F).map { UInt8($0) }
        default:
            // The whole block: 4080 bytes, no padding.
            let fixed = "StreamTitle='';StreamUrl='\(url)';".utf8.count
            let pattern: [UInt8] = Array("\u{1B}[2J".utf8) + [0, 0x07, 0x9B, 0xC3, 0x28] + Array("';x ".utf8)
            let fill = max(0, 255 * 16 - fixed - text.count)
            return text + (0..<fill).map { pattern[$0 % pattern.count] }
        }
    }

    /// What a client decodes from `value` (UTF-8 when valid, else CP1252).
    package static func decoded(_ value: [UInt8]) -> String {
        TextDecoding.decode(value, fallback: .cp1252)
    }
}
