import ICYWire
import Locking

/// Keeps the packets of the last few tracks, so `s` can save the song being heard from its
/// beginning, as a tagged file like the recorder's.
///
/// Tracks are numbered like `PlayerStatus.trackNumber`: by title changes. The first title of a
/// connection names audio already playing, so it renames the track in progress instead of
/// starting one (that track began before we tuned in: saved, it goes to `incomplete/`).
/// A save goes on with the live stream until the next title, then the file is complete.
///
/// Feed it from behind the split aligner, as the recorder is: its tracks then begin and end at
/// the same cuts a recording makes (in the gap, when there is one). The aligner holds each title
/// until the audio after it has arrived, so the song the player already plays may not have
/// begun here yet: its save is then promised and starts when it does.
package final class SongKeeper: StreamSink {
    /// Makes the recorder for one save. `wholeTrack`: the packets start exactly at a title change.
    package typealias MakeRecorder = @Sendable (_ wholeTrack: Bool) throws -> QueuedSink

    package enum SaveResult: Sendable, Hashable {
        case started(TrackInfo?)
        /// The song is heard, but its cut is not decided yet: the save starts when it is.
        case willStart
        case alreadySaving
        /// The track is no longer (or not yet) kept.
        case unavailable
    }

    /// 30 minutes per track at most (the oldest audio goes first; the song is then no longer whole).
    package static let defaultMaxSeconds: Double = 30 * 60
    /// The heard track lags the received one by the player's queue (and the aligner's hold):
    /// a few tracks cover that...
    private static let keptTracks = 4
    /// ...and once the newest track has this much audio, no earlier one can still be playing.
    private static let heardLagSeconds: Double = 60

    private let makeRecorder: MakeRecorder
    private let maxSeconds: Double
    private let core = Locked(Core())

    private struct KeptTrack {
        /// Track numbers this audio answers to (0 and 1 when the first title renamed it).
        var numbers: ClosedRange<Int>
        var change: TrackChange?
        var isWhole: Bool
        var packets: [Packet] = []
        /// Packets before this index were dropped by the cap (compacted now and then).
        var first = 0
        var seconds: Double = 0
    }

    private struct Save {
        let number: Int
        let sink: QueuedSink
    }

    private struct Core {
        var head: StreamHead?
        var tracks = [KeptTrack(numbers: 0...0, change: nil, isWhole: false)]
        var titleCount = 0
        var saves: [Save] = []
        /// A track the player plays but this keeper has not begun yet: saved when it begins.
        var promised: Int?
        /// Every recorder handed out, to drain at exit.
        var recorders: [QueuedSink] = []
    }

    package init(maxSeconds: Double = SongKeeper.defaultMaxSeconds, makeRecorder: @escaping MakeRecorder) {
        self.maxSeconds = maxSeconds
        self.makeRecorder = makeRecorder
    }

    package func receive(_ event: StreamEvent) throws {
        core.withLock { core in
            switch event {
            case .head(let head):
                core.head = head
            case .format:
                break
            case .packet(let packet):
                keep(packet, in: &core)
                let number = core.tracks[core.tracks.count - 1].numbers.upperBound
                for save in core.saves where save.number == number { try? save.sink.receive(event) }
            case .metadata(let change):
                startTrack(change, in: &core)
                if let number = core.promised, let index = core.tracks.firstIndex(where: { $0.numbers.contains(number) }) {
                    core.promised = nil
                    // Nobody is left to tell of a failure: the player showed "will save" already.
                    _ = try? startSave(of: index, in: &core)
                }
            case .discontinuity:
                core.tracks[core.tracks.count - 1].isWhole = false
                for save in core.saves { try? save.sink.receive(event) }
            case .connection:
                break
            case .ended:
                for save in core.saves { try? save.sink.receive(event) }
                core.saves.removeAll()
            }
        }
    }

    private func keep(_ packet: Packet, in core: inout Core) {
        let last = core.tracks.count - 1
        core.tracks[last].packets.append(packet)
        core.tracks[last].seconds += packet.duration
        while core.tracks[last].seconds > maxSeconds, core.tracks[last].first < core.tracks[last].packets.count {
            core.tracks[last].seconds -= core.tracks[last].packets[core.tracks[last].first].duration
            core.tracks[last].first += 1
            core.tracks[last].isWhole = false
        }
        if core.tracks.count > 1, core.tracks[last].seconds > Self.heardLagSeconds {
            core.tracks.removeFirst(last)
            return
        }
        // Compact rarely: dropping from the front of an array copies the rest.
        if core.tracks[last].first > 4096, core.tracks[last].first * 2 > core.tracks[last].packets.count {
            core.tracks[last].packets.removeFirst(core.tracks[last].first)
            core.tracks[last].first = 0
        }
    }

    private func startTrack(_ change: TrackChange, in core: inout Core) {
        core.titleCount += 1
        let last = core.tracks.count - 1
        if core.titleCount == 1, core.tracks[last].change == nil {
            core.tracks[last].numbers = core.tracks[last].numbers.lowerBound...core.titleCount
            core.tracks[last].change = change
            return
        }
        // Saves of the track that just ended: the title change completes their file.
        let ending = core.tracks[last].numbers.upperBound
        for save in core.saves where save.number == ending {
            try? save.sink.receive(.metadata(change))
            try? save.sink.receive(.ended(.endOfStream))
        }
        core.saves.removeAll { $0.number == ending }
        core.tracks.append(KeptTrack(numbers: core.titleCount...core.titleCount, change: change, isWhole: true))
        if core.tracks.count > Self.keptTracks { core.tracks.removeFirst(core.tracks.count - Self.keptTracks) }
    }

    /// Saves track `number` (the one the player says is heard) from its beginning.
    package func save(trackNumber number: Int) throws -> SaveResult {
        try core.withLock { core throws -> SaveResult in
            guard let index = core.tracks.firstIndex(where: { $0.numbers.contains(number) }) else {
                guard number > core.titleCount else { return .unavailable }
                guard core.promised != number else { return .alreadySaving }
                core.promised = number
                return .willStart
            }
            return try startSave(of: index, in: &core)
        }
    }

    private func startSave(of index: Int, in core: inout Core) throws -> SaveResult {
        let track = core.tracks[index]
        let key = track.numbers.upperBound
        guard !core.saves.contains(where: { $0.number == key }) else { return .alreadySaving }
        let sink = try makeRecorder(track.isWhole)
        core.recorders.append(sink)
        // Handing the kept packets over is one dispatch each (~70 ms for a 30-minute
        // track); under the lock, so no live packet can slip in between.
        if let head = core.head { try sink.receive(.head(head)) }
        if let change = track.change { try sink.receive(.metadata(change)) }
        for packet in track.packets[track.first...] { try sink.receive(.packet(packet)) }
        if index == core.tracks.count - 1 {
            core.saves.append(Save(number: key, sink: sink))
        } else {
            if let next = core.tracks[index + 1].change { try sink.receive(.metadata(next)) }
            try sink.receive(.ended(.endOfStream))
        }
        return .started(track.change?.info)
    }

    /// At exit: the song being saved ends here (incomplete), and every file is written.
    package func finish() {
        let recorders = core.withLock { core -> [QueuedSink] in
            for save in core.saves { try? save.sink.receive(.ended(.userRequest)) }
            core.saves.removeAll()
            return core.recorders
        }
        for recorder in recorders { recorder.drain() }
    }
}
