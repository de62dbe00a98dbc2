/// What a key does while playing on a terminal. A pure mapping, tested without a terminal.
public enum PlayerKeyAction: Sendable, Hashable {
    case togglePause
    case changeVolume(by: Int)
    /// Save the song being heard, from its beginning.
    case saveSong
    case toggleRecording
    case quit

    /// Volume steps of 5, like most players.
    public static let volumeStep = 5

    /// nil for keys that do nothing.
    public init?(key: UInt8) {
        switch key {
        case UInt8(ascii: " "), UInt8(ascii: "p"): self = .togglePause
        case UInt8(ascii: "+"), UInt8(ascii: "="), UInt8(ascii: "0"): self = .changeVolume(by: Self.volumeStep)
        case UInt8(ascii: "-"), UInt8(ascii: "9"): self = .changeVolume(by: -Self.volumeStep)
        case UInt8(ascii: "s"), UInt8(ascii: "S"): self = .saveSong
        case UInt8(ascii: "r"), UInt8(ascii: "R"): self = .toggleRecording
        case UInt8(ascii: "q"), UInt8(ascii: "Q"), 0x1B: self = .quit
        default: return nil
        }
    }
}
