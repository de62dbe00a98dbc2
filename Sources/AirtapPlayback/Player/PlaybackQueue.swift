import AirtapIngest
import AirtapSupport
import DequeModule
import FoundationEssentials
import ICYWire
import Locking

/// What travels from the ingest thread to the player thread, in stream order.
enum PlaybackEntry: Sendable {
    case packet(Packet)
    /// A title change: the packets after it are its audio. `number` counts title changes (1, 2, …).
    case title(TrackInfo, number: Int)
    /// Audio is missing here: the decoder starts afresh.
    case discontinuity
    /// The last entry: play out what came before, then stop.
    case ended(StopReason)
}

/// Commands from other threads (keys, signals), handled on the player thread.
enum PlayerCommand: Sendable, Hashable {
    case togglePause
    case changeVolume(by: Int)
    /// A linear amplitude factor, 0...1 (MPRIS's Volume).
    case setAmplitude(Double)
    /// Paused (true) or not, whatever the state was.
    case setPaused(Bool)
    case stop(StopReason)
    /// The listener stopped playback; the player waits for `resume` (`PlaybackMachine.standBy`).
    case standBy
    case resume
    /// The station's connection changed (it shows while the player waits for audio).
    case connection(ConnectionState)
}

/// The bounded queue between the ingest thread and the player thread.
///
/// Bounded by seconds of audio: past `capacitySeconds` the *oldest* packets are dropped (the
/// device stalled or playback is paused), so memory stays flat and playback resumes close to
/// live. Titles are never dropped: a title whose packets went keeps naming the audio after it.
/// Holds compressed packets (decoding happens just before the device), so ten seconds cost
/// about 160 KB at 128 kbps.
final class PlaybackQueue: @unchecked Sendable {
    // Why @unchecked Sendable is sound: every stored `var` is read and written only while
    // holding `condition` (a mutex with a condition variable); the `let`s are immutable.
    private let condition = ConditionLock()
    let capacitySeconds: Double
    private var entries: Deque<PlaybackEntry>
    private var queuedSeconds: Double = 0
    /// Bytes of the queued packets: the bound where seconds are none (a hostile Ogg stream whose
    /// pages all claim to hold no audio).
    private var queuedBytes = 0
    /// At most this many bytes a second of capacity: a megabit, past any station's bitrate.
    static let bytesPerSecondOfCapacity = 128 * 1024
    private var capacityBytes: Int { Int(capacitySeconds * Double(Self.bytesPerSecondOfCapacity)) }
    /// The stream's end is queued: nothing more is taken.
    private var hasEnded = false
    /// A title whose following packets were dropped: handed out before anything else.
    private var carriedTitle: PlaybackEntry?
    private var commands: [PlayerCommand] = []
    private var droppedPackets = 0
    /// The player sleeps in `wait` and wants to hear about new entries (not only commands).
    private var waitsForEntries = false
    /// Entries pushed so far, so the player can wait for one newer than what it looked at.
    private var pushes = 0
    /// Another station comes next: the player starts afresh before it takes anything more.
    private var stationChangePending = false

    init(capacitySeconds: Double) {
        self.capacitySeconds = capacitySeconds
        // Room for the capacity at ~38 frames per second (MP3 at 44.1 kHz) without growing. Short
        // frames (low sample rates) or many titles need more; the Deque grows, the bound in
        // seconds still holds.
        entries = Deque(minimumCapacity: max(64, Int(capacitySeconds * 40)))
    }

    // MARK: Ingest side

    /// Wakes the player only when it waits for entries: while the device is full it sleeps
    /// until the device has room, however many packets arrive meanwhile.
    func push(_ entry: PlaybackEntry) {
        condition.lock()
        defer {
            let wake = waitsForEntries
            condition.unlock()
            if wake { condition.signal() }
        }
        // Nothing follows the end (the feed may still pass on what arrives until the session stops).
        guard !hasEnded else { return }
        if case .packet(let packet) = entry {
            while queuedSeconds + packet.duration > capacitySeconds || queuedBytes + packet.bytes.count > capacityBytes,
                  !entries.isEmpty {
                dropOldest()
            }
            queuedSeconds += packet.duration
            queuedBytes += packet.bytes.count
        }
        if case .ended = entry { hasEnded = true }
        entries.append(entry)
        pushes &+= 1
    }

    private func dropOldest() {
        guard let entry = entries.popFirst() else { return }
        switch entry {
        case .packet(let packet):
            queuedSeconds -= packet.duration
            queuedBytes -= packet.bytes.count
            droppedPackets += 1
        case .title:
            carriedTitle = entry
        case .discontinuity:
            break
        case .ended:
            // Unreachable while `push` refuses entries after the end; kept, should that change.
            entries.append(entry)
        }
    }

    // MARK: Other threads

    /// Another station comes next: everything queued is dropped, and the player is told to
    /// start afresh (`takeStationChange`) before it takes what the next station pushes. Call it
    /// while no station pushes: after one session has stopped, before the next starts.
    func changeStation() {
        condition.lock()
        entries.removeAll(keepingCapacity: true)
        queuedSeconds = 0
        queuedBytes = 0
        hasEnded = false
        carriedTitle = nil
        stationChangePending = true
        condition.unlock()
        condition.signal()
    }

    func send(_ command: PlayerCommand) {
        condition.lock()
        commands.append(command)
        condition.unlock()
        condition.signal()
    }

    // MARK: Player side

    /// The next entry, or nil when empty (and while a station change waits to be taken).
    func take() -> PlaybackEntry? {
        condition.lock()
        defer { condition.unlock() }
        guard !stationChangePending else { return nil }
        if let carried = carriedTitle {
            carriedTitle = nil
            return carried
        }
        guard let entry = entries.popFirst() else { return nil }
        if case .packet(let packet) = entry {
            queuedSeconds = max(0, queuedSeconds - packet.duration)
            queuedBytes -= packet.bytes.count
        }
        return entry
    }

    struct Fill {
        var seconds: Double
        /// The stream's end is queued (or was taken): no more audio will come.
        var complete: Bool
        var dropped: Int
        var isEmpty: Bool
        /// Entries pushed so far: `wait(…, forEntriesAfter:)` returns once there is a newer one.
        var pushes: Int
    }

    var fill: Fill {
        condition.lock()
        defer { condition.unlock() }
        return Fill(seconds: queuedSeconds, complete: hasEnded, dropped: droppedPackets, isEmpty: entries.isEmpty && carriedTitle == nil,
                    pushes: pushes)
    }

    /// Whether another station comes next (once: the player starts afresh when it says so).
    func takeStationChange() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        defer { stationChangePending = false }
        return stationChangePending
    }

    /// The commands sent since the last call, oldest first.
    func takeCommands(into buffer: inout [PlayerCommand]) {
        buffer.removeAll(keepingCapacity: true)
        condition.lock()
        if !commands.isEmpty {
            buffer.append(contentsOf: commands)
            commands.removeAll(keepingCapacity: true)
        }
        condition.unlock()
    }

    /// Sleeps until a command is sent, a station change, `seconds` pass (nil: no limit), or, given `pushes` (a
    /// `Fill.pushes`), an entry newer than those is pushed. Returns at once when there is
    /// already a command or such an entry.
    func wait(seconds: Double?, forEntriesAfter pushes: Int?) {
        condition.lock()
        if commands.isEmpty, !stationChangePending, pushes.map({ $0 == self.pushes }) ?? true {
            waitsForEntries = pushes != nil
            if let seconds {
                _ = condition.wait(seconds: seconds)
            } else {
                condition.wait()
            }
            waitsForEntries = false
        }
        condition.unlock()
    }
}
