/// What a key does while playing on a terminal. A pure mapping, tested without a terminal.
package enum PlayerKeyAction: Sendable, Hashable {
    case togglePause
    case changeVolume(by: Int)
    /// Save the song being heard, from its beginning.
    case saveSong
    case toggleRecording
    /// The next or previous station of stations.json (`>` and `<`, as in mpv's playlist).
    case moveStation(forward: Bool)
    case quit

    /// Volume steps of 5, like most players.
    package static let volumeStep = 5

    /// nil for keys that do nothing.
    package init?(key: UInt8) {
        switch key {
        case UInt8(ascii: " "), UInt8(ascii: "p"): self = .togglePause
        case UInt8(ascii: "+"), UInt8(ascii: "="), UInt8(ascii: "0"): self = .changeVolume(by: Self.volumeStep)
        case UInt8(ascii: "-"), UInt8(ascii: "9"): self = .changeVolume(by: -Self.volumeStep)
        case UInt8(ascii: "s"), UInt8(ascii: "S"): self = .saveSong
        case UInt8(ascii: "r"), UInt8(ascii: "R"): self = .toggleRecording
        case UInt8(ascii: ">"): self = .moveStation(forward: true)
        case UInt8(ascii: "<"): self = .moveStation(forward: false)
        case UInt8(ascii: "q"), UInt8(ascii: "Q"): self = .quit
        default: return nil
        }
    }
}

/// Turns the terminal's bytes into key actions, skipping escape sequences: an arrow or function
/// key sends ESC, then `[` or `O`, parameters and a final byte (`ESC [ 2 0 ~` is F9), none of which
/// may act as a key of its own (the `0` would turn the volume up). A lone ESC does nothing.
struct PlayerKeyDecoder: Sendable {
    private enum State {
        case ground
        /// After ESC: `[` or `O` opens a sequence, anything else ends it.
        case escape
        /// Inside `ESC [` or `ESC O`: parameters until a final byte (0x40-0x7E).
        case sequence
    }

    private var state = State.ground

    package init() {}

    package mutating func action(for byte: UInt8) -> PlayerKeyAction? {
        switch state {
        case .ground:
            if byte == 0x1B {
                state = .escape
                return nil
            }
            return PlayerKeyAction(key: byte)
        case .escape:
            state = byte == UInt8(ascii: "[") || byte == UInt8(ascii: "O") ? .sequence : .ground
            return nil
        case .sequence:
            if (0x40...0x7E).contains(byte) { state = .ground }
            return nil
        }
    }
}
