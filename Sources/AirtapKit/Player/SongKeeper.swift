import ICYWire
import Locking
import Logging

/// Keeps the packets of the last few tracks, so `s` can save the song being heard from its
/// beginning, as a tagged file like the recorder's.
///
/// Tracks are numbered like `PlayerStatus.trackNumber`: by title changes. The first title of a
/// connection names audio already playing, so it renames the track in progress instead of
/// starting one (that track began before we tuned in: saved, it goes to `incomplete/`).
/// A save goes on with the live stream until the next title, then the file is complete.
///
/// It runs on the ingest thread and only keeps packets there: where a recording would cut (in
/// the gap) is searched for when a song is saved, not at every title change. The save replays
/// the song, with the audio around its two titles, through a split search of its own, so its
/// file begins and ends at the cuts a recording of the stream makes.
package final class SongKeeper: StreamSink {
    /// Makes the recorder for one save. `wholeTrack`: the packets start exactly at a title change.
    package typealias MakeRecorder = @Sendable (_ wholeTrack: Bool) throws -> QueuedSink

    /// How a save finds its cuts: a split search in front of its recorder, and the audio that
    /// search needs before a title.
    package struct CutSearch: Sendable {
        package var secondsBefore: Double
        package var aligned: @Sendable (_ recorder: any StreamSink) -> any StreamSink

        /// The search a recording of the stream makes; nil when it leaves every cut at its title.
        package init?(_ options: SplitOptions, logger: Logger) {
            guard !options.isPassThrough else { return nil }
            secondsBefore = SplitAligner.secondsNeededBefore(options)
            aligned = { SplitAligner($0, options: options, logger: logger, joinsMidTrack: true) }
        }
    }

    package enum SaveResult: Sendable, Hashable {
        case started(TrackInfo?)
        case alreadySaving
        /// The track is no longer (or not yet) kept.
        case unavailable
    }

    /// 30 minutes per track at most (the oldest audio goes first; the song is then no longer whole).
    package static let defaultMaxSeconds: Double = 30 * 60
    /// The heard track lags the received one by the player's queue: a few tracks cover that...
    private static let keptTracks = 4
    /// ...and once the newest track has this much audio, no earlier one can still be playing.
    private static let heardLagSeconds: Double = 60

    private let makeRecorder: MakeRecorder
    private let cutSearch: CutSearch?
    private let maxSeconds: Double
    private let core = Locked(Core())

    private struct KeptTrack {
        /// Track numbers this audio answers to (0 and 1 when the first title renamed it).
        var numbers: ClosedRange<Int>
        var change: TrackChange?
        var isWhole: Bool
        /// The end of the track before, as much as the cut search needs; nil where the track's
        /// beginning is not a cut (the audio we tuned in to).
        var leadIn: [Packet]?
        var packets: [Packet] = []
        /// Packets before this index were dropped by the cap (compacted now and then).
        var first = 0
        var seconds: Double = 0
    }

    /// A save under way: it takes the live stream until its search has placed the next title.
    private struct Save {
        let number: Int
        let sink: QueuedSink
        let song: SongBounds
    }

    private struct Core {
        var head: StreamHead?
        var tracks = [KeptTrack(numbers: 0...0, change: nil, isWhole: false)]
        var titleCount = 0
        var saves: [Save] = []
        /// Saves whose recorder is being made, outside the lock.
        var starting: Set<Int> = []
        /// Every queue handed out, the save's before its recorder's, to drain at exit.
        var queues: [QueuedSink] = []
    }

    package init(maxSeconds: Double = SongKeeper.defaultMaxSeconds, cutSearch: CutSearch? = nil,
                 makeRecorder: @escaping MakeRecorder) {
        self.maxSeconds = maxSeconds
        self.cutSearch = cutSearch
        self.makeRecorder = makeRecorder
    }

    package func receive(_ event: StreamEvent) throws {
        core.withLock { core in
            switch event {
            case .head(let head):
                core.head = head
            case .format, .connection:
                break
            case .packet(let packet):
                keep(packet, in: &core)
                if !core.saves.isEmpty { forward(event, in: &core) }
            case .metadata(let change):
                startTrack(change, in: &core)
                forward(event, in: &core)
            case .discontinuity:
                core.tracks[core.tracks.count - 1].isWhole = false
                forward(event, in: &core)
            case .ended:
                forward(event, in: &core)
                core.saves.removeAll()
            }
        }
    }

    private func forward(_ event: StreamEvent, in core: inout Core) {
        core.saves.removeAll { $0.song.isComplete }
        for save in core.saves { try? save.sink.receive(event) }
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
        var leadIn: [Packet]?
        if let cutSearch {
            let ending = core.tracks[last]
            var start = ending.packets.count
            var seconds = 0.0
            while start > ending.first, seconds < cutSearch.secondsBefore {
                start -= 1
                seconds += ending.packets[start].duration
            }
            leadIn = Array(ending.packets[start...])
        }
        core.tracks.append(KeptTrack(numbers: core.titleCount...core.titleCount, change: change, isWhole: true,
                                     leadIn: leadIn))
        if core.tracks.count > Self.keptTracks { core.tracks.removeFirst(core.tracks.count - Self.keptTracks) }
    }

    /// Saves track `number` (the one the player says is heard) from its beginning.
    package func save(trackNumber number: Int) throws -> SaveResult {
        // The recorder is made outside the lock (directories, the library index): the ingest
        // thread keeps packets under it, and a slow disk must not hold the stream up.
        let reservation = core.withLock { core -> Reservation in
            guard let track = core.tracks.first(where: { $0.numbers.contains(number) }) else { return .refused(.unavailable) }
            let key = track.numbers.upperBound
            guard !core.starting.contains(key), !core.saves.contains(where: { $0.number == key }) else {
                return .refused(.alreadySaving)
            }
            core.starting.insert(key)
            return .reserved(key: key, isWhole: track.isWhole)
        }
        let key: Int, isWhole: Bool
        switch reservation {
        case .refused(let result): return result
        case .reserved(let reservedKey, let reservedWhole): (key, isWhole) = (reservedKey, reservedWhole)
        }
        let recorder: QueuedSink
        do {
            recorder = try makeRecorder(isWhole)
        } catch {
            _ = core.withLock { $0.starting.remove(key) }
            throw error
        }
        return try core.withLock { core throws -> SaveResult in
            core.starting.remove(key)
            core.queues.append(recorder)
            guard let index = core.tracks.firstIndex(where: { $0.numbers.upperBound == key }) else { return .unavailable }
            let track = core.tracks[index]
            let searchesStart = cutSearch != nil && track.leadIn != nil
            let song = SongBounds(recorder, searchingStart: searchesStart)
            let sink = QueuedSink(cutSearch.map { $0.aligned(song) } ?? song, label: "play.save", coalescing: 0.25,
                                  target: .global(qos: .utility))
            core.queues.insert(sink, at: core.queues.count - 1)
            // The song, the audio before it that its search needs, and what came after it: its
            // search then places the next title once the audio after that has arrived.
            var replay: [StreamEvent] = []
            if searchesStart {
                if let head = core.head { replay.append(.head(head)) }
                replay += track.leadIn?.map { .packet($0) } ?? []
                if let change = track.change { replay.append(.metadata(change)) }
            } else {
                // Not searched: the title opens the file where it arrived.
                if let head = core.head { try recorder.receive(.head(head)) }
                if let change = track.change { try recorder.receive(.metadata(change)) }
            }
            for kept in core.tracks[index...] {
                if kept.numbers.upperBound != key, let change = kept.change { replay.append(.metadata(change)) }
                replay += kept.packets[kept.first...].lazy.map { .packet($0) }
            }
            try sink.receive(contentsOf: replay)
            core.saves.append(Save(number: key, sink: sink, song: song))
            return .started(track.change?.info)
        }
    }

    private enum Reservation {
        case reserved(key: Int, isWhole: Bool)
        case refused(SaveResult)
    }

    /// At exit: the song being saved ends here (incomplete, unless its next title has arrived),
    /// and every file is written.
    package func finish() {
        let queues = core.withLock { core -> [QueuedSink] in
            for save in core.saves { try? save.sink.receive(.ended(.userRequest)) }
            core.saves.removeAll()
            return core.queues
        }
        for queue in queues { queue.drain() }
    }
}

/// Between a save's split search and its recorder: lets through one song, from its title (where
/// the search put it) to the next title, which ends the file.
private final class SongBounds: StreamSink {
    private enum Part {
        case before
        case song
        case after
    }

    private let recorder: any StreamSink
    private let part: Locked<Part>

    /// `searchingStart`: the events begin before the song, and its title opens it; else they
    /// begin with the song, whose title the recorder has already.
    init(_ recorder: any StreamSink, searchingStart: Bool) {
        self.recorder = recorder
        part = Locked(searchingStart ? .before : .song)
    }

    /// Whether the next title has been placed: nothing more of the stream belongs to the song.
    var isComplete: Bool { part.withLock { $0 == .after } }

    func receive(_ event: StreamEvent) throws {
        let (passes, ends) = part.withLock { part -> (Bool, Bool) in
            switch (part, event) {
            case (.after, _), (.before, .packet), (.before, .discontinuity), (.before, .ended), (.before, .format),
                 (.before, .connection):
                return (false, false)
            case (.before, .metadata):
                part = .song
                return (true, false)
            case (.song, .metadata):
                part = .after
                return (true, true)
            case (.song, .ended):
                part = .after
                return (true, false)
            case (.before, .head), (.song, _):
                return (true, false)
            }
        }
        if passes { try recorder.receive(event) }
        if ends { try recorder.receive(.ended(.endOfStream)) }
    }
}
