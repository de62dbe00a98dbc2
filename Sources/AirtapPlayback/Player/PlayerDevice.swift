/// What the player tells the network's rest at each wake-up.
package struct PlayerDevice: Sendable, Hashable {
    /// Rests are allowed at all (playing or paused with the buffer full; `PlaybackMachine`).
    package var allowsRest: Bool
    /// Audio decoded or written and not yet heard, in seconds: the device plays it out in real
    /// time while `isPlaying`.
    package var heldSeconds: Double
    package var isPlaying: Bool

    package init(allowsRest: Bool, heldSeconds: Double, isPlaying: Bool) {
        self.allowsRest = allowsRest
        self.heldSeconds = heldSeconds
        self.isPlaying = isPlaying
    }
}
