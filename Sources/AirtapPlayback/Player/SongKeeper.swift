import AirtapCuts
import AirtapIngest
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
/// file begins and ends at the cuts a recording of the stream makes. (One difference: after a
/// track shorter than the search's window, a jingle, its window begins at that track's title,
/// where a recording's begins at its cut.)
package final class SongKeeper: StreamSink {
    /// Makes the recorder for one save. `wholeTrack`: the packets start exactly at a title change.
    typealias MakeRecorder = @Sendable (_ wholeTrack: Bool) throws -> QueuedSink

    /// How a save finds its cuts: a split search in front of its recorder, and the audio that
    /// search needs before a title.
    package struct CutSearch: Sendable {
        package var secondsBefore: Double
        /// `joinsMidTrack`: the replay begins inside a track with a title (`SplitAligner`).
        package var aligned: @Sendable (_ recorder: any StreamSink, _ joinsMidTrack: Bool) -> any StreamSink

        /// The search a recording of the stream makes; nil when it leaves every cut at its title.
        package init?(_ options: SplitOptions, journal: TitleDelayJournal? = nil, logger: Logger) {
            guard !options.isPassThrough else { return nil }
            secondsBefore = SplitAligner.secondsNeededBefore(options)
            aligned = { SplitAligner($0, options: options, logger: logger, joinsMidTrack: $1, journal: journal) }
        }
    }

    package enum SaveResult: Sendable, Hashable {
        case started(TrackInfo?)
        case alreadySaving
        /// The track is no longer kept (or play is leaving the station).
        case unavailable
    }

    /// 30 minutes per track at most (the oldest audio goes first; the song is then no longer whole).
    package static let defaultMaxSeconds: Double = 30 * 60
    /// The heard track lags the received one by the player's queue: a few tracks cover that...
    private static let keptTracks = 4
    /// ...and once the newest track has this much audio, no earlier one can still be playing.
    private static let heardLagSeconds: Double = 60
    /// A track's packets are held to its seconds, and to these in case a station's packets claim
    /// no duration (Ogg pages without a granule position): 128 a second is more than any codec's
    /// frames (AAC at 96 kHz, 94), 64 KB a second is 512 kbps.
    private static let packetsPerSecond: Double = 128
    private static let bytesPerSecond: Double = 64_000

    private let makeRecorder: MakeRecorder
    private let cutSearch: CutSearch?
    private let maxSeconds: Double
    private let maxPackets: Int
    private let maxBytes: Int
    private let core = Locked(Core())

    private struct KeptTrack {
        /// Track numbers this audio answers to (0 and 1 when the first title renamed it).
        var numbers: ClosedRange<Int>
        var change: TrackChange?
        var isWhole: Bool
        /// The connection's head the track's first packets came with.
        var head: StreamHead?
        /// The end of the track before (its packets, and the events among them), as much as the
        /// cut search needs, and the head it came with; nil where the track's beginning is not a
        /// cut (the audio we tuned in to).
        var leadIn: (head: StreamHead?, events: [StreamEvent])?
        var packets: [Packet] = []
        /// The other events a recorder needs (a new connection's head, a format change, a gap in
        /// the audio), each with the index of the packet it came before.
        var markers: [(before: Int, event: StreamEvent)] = []
        /// Packets before this index were dropped by the cap (compacted now and then).
        var first = 0
        /// The cap dropped its beginning: it no longer begins at a cut.
        var isTrimmed = false
        var seconds: Double = 0
        var bytes = 0

        /// Appends the events from packet `start` on, markers in their places.
        func appendEvents(from start: Int, to events: inout [StreamEvent]) {
            var marker = markers.firstIndex { $0.before >= start } ?? markers.count
            for index in start..<packets.count {
                while marker < markers.count, markers[marker].before == index {
                    events.append(markers[marker].event)
                    marker += 1
                }
                events.append(.packet(packets[index]))
            }
            events += markers[marker...].map(\.event)
        }

        /// The head in effect at packet `index`.
        func head(at index: Int) -> StreamHead? {
            for marker in markers.reversed() where marker.before <= index {
                if case .head(let head) = marker.event { return head }
            }
            return head
        }
    }

    /// A save under way: it takes the live stream until its search has placed the next title.
    private struct Save {
        /// The first number of its track (a rename adds one after it).
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
        /// Every queue handed out, a save's before its recorder's, to drain at exit.
        var queues: [QueuedSink] = []
        /// `finish` ran: no save starts any more.
        var isFinished = false
    }

    package init(maxSeconds: Double = SongKeeper.defaultMaxSeconds, cutSearch: CutSearch? = nil,
                 makeRecorder: @escaping @Sendable (_ wholeTrack: Bool) throws -> QueuedSink) {
        self.maxSeconds = maxSeconds
        maxPackets = Int(maxSeconds * Self.packetsPerSecond)
        maxBytes = Int(maxSeconds * Self.bytesPerSecond)
        self.cutSearch = cutSearch
        self.makeRecorder = makeRecorder
    }

    package func receive(_ event: StreamEvent) throws {
        core.withLock { core in
            switch event {
            case .connection:
                return
            case .packet(let packet):
                keep(packet, in: &core)
                if core.saves.isEmpty { return }
            case .metadata(let change):
                startTrack(change, in: &core)
            case .head(let head):
                core.head = head
                let last = core.tracks.count - 1
                if core.tracks[last].packets.isEmpty { core.tracks[last].head = head }
                mark(event, in: &core)
            case .format:
                mark(event, in: &core)
            case .discontinuity:
                core.tracks[core.tracks.count - 1].isWhole = false
                mark(event, in: &core)
            case .ended:
                for save in core.saves { try? save.sink.receive(event) }
                core.saves.removeAll()
                return
            }
            forward(event, in: &core)
        }
    }

    private func mark(_ event: StreamEvent, in core: inout Core) {
        let last = core.tracks.count - 1
        core.tracks[last].markers.append((core.tracks[last].packets.count, event))
    }

    /// Hands the event to every save under way; one whose song is complete lets go of what its
    /// search still holds, and is dropped.
    private func forward(_ event: StreamEvent, in core: inout Core) {
        core.saves.removeAll { save in
            guard save.song.isComplete else { return false }
            try? save.sink.receive(.ended(.endOfStream))
            return true
        }
        for save in core.saves { try? save.sink.receive(event) }
    }

    private func keep(_ packet: Packet, in core: inout Core) {
        let last = core.tracks.count - 1
        core.tracks[last].packets.append(packet)
        core.tracks[last].seconds += packet.duration
        core.tracks[last].bytes += packet.bytes.count
        while core.tracks[last].first < core.tracks[last].packets.count,
              core.tracks[last].seconds > maxSeconds || core.tracks[last].bytes > maxBytes
              || core.tracks[last].packets.count - core.tracks[last].first > maxPackets {
            let dropped = core.tracks[last].packets[core.tracks[last].first]
            core.tracks[last].seconds -= dropped.duration
            core.tracks[last].bytes -= dropped.bytes.count
            core.tracks[last].first += 1
            core.tracks[last].isWhole = false
            core.tracks[last].isTrimmed = true
        }
        if core.tracks.count > 1, core.tracks[last].seconds > Self.heardLagSeconds {
            core.tracks.removeFirst(last)
            return
        }
        // Compact rarely: dropping from the front of an array copies the rest.
        let first = core.tracks[last].first
        if first > 4096, first * 2 > core.tracks[last].packets.count {
            core.tracks[last].packets.removeFirst(first)
            core.tracks[last].markers = core.tracks[last].markers.compactMap { marker in
                marker.before >= first ? (marker.before - first, marker.event) : nil
            }
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
        var leadIn: (head: StreamHead?, events: [StreamEvent])?
        if let cutSearch {
            let ending = core.tracks[last]
            var start = ending.packets.count
            var seconds = 0.0
            // Held to a second's worth of packets for each second wanted, if they claim no duration.
            let most = Int(cutSearch.secondsBefore * Self.packetsPerSecond)
            while start > ending.first, seconds < cutSearch.secondsBefore, ending.packets.count - start < most {
                start -= 1
                seconds += ending.packets[start].duration
            }
            var events: [StreamEvent] = []
            ending.appendEvents(from: start, to: &events)
            leadIn = (ending.head(at: start), events)
        }
        core.tracks.append(KeptTrack(numbers: core.titleCount...core.titleCount, change: change, isWhole: true,
                                     head: core.head, leadIn: leadIn))
        if core.tracks.count > Self.keptTracks { core.tracks.removeFirst(core.tracks.count - Self.keptTracks) }
    }

    /// Saves track `number` (the one the player says is heard) from its beginning.
    package func save(trackNumber number: Int) throws -> SaveResult {
        // The recorder is made outside the lock (directories, the library index): the ingest
        // thread keeps packets under it, and a slow disk must not hold the stream up.
        let reservation = reserve(trackNumber: number)
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
        let result = try core.withLock { core throws -> SaveResult in
            core.starting.remove(key)
            guard !core.isFinished, let index = core.tracks.firstIndex(where: { $0.numbers.lowerBound == key }) else {
                return .unavailable
            }
            core.queues.append(recorder)
            let track = core.tracks[index]
            // Where the track began at a title, its search starts with the end of the track
            // before. Not searched at its start: the audio we tuned in to (its first title only
            // names it), and a track the cap cut the beginning off.
            let searchesStart = cutSearch != nil && track.leadIn != nil && !track.isTrimmed
            let head = searchesStart ? track.leadIn?.head : track.head(at: track.first)
            let song = SongBounds(recorder, searchingStart: searchesStart, renamedByTitle: track.change == nil,
                                  metaint: head?.response.metaint)
            let searched = cutSearch.map { $0.aligned(song, track.change != nil) } ?? song
            let sink = QueuedSink(searched, label: "play.save", coalescing: 0.25, target: .global(qos: .utility))
            core.queues.insert(sink, at: core.queues.count - 1)
            // The song, what its search needs before it, and what came after it: the search then
            // places the next title once the audio after that has arrived. (The recorder's queue
            // never throws: a save that has begun is always ended, by its song or by `finish`.)
            let replay = try Self.replay(core.tracks[index...], key: key, head: head, searchesStart: searchesStart,
                                         recorder: recorder)
            try sink.receive(contentsOf: replay)
            core.saves.append(Save(number: key, sink: sink, song: song))
            return .started(track.change?.info)
        }
        if result == .unavailable { recorder.drain() }
        return result
    }

    /// Marks track `number`'s save as starting, so a second s waits; refused when the track is no
    /// longer kept or is being saved.
    private func reserve(trackNumber number: Int) -> Reservation {
        core.withLock { core -> Reservation in
            guard !core.isFinished, let track = core.tracks.first(where: { $0.numbers.contains(number) }) else {
                return .refused(.unavailable)
            }
            let key = track.numbers.lowerBound
            guard !core.starting.contains(key), !core.saves.contains(where: { $0.number == key }) else {
                return .refused(.alreadySaving)
            }
            core.starting.insert(key)
            return .reserved(key: key, isWhole: track.isWhole)
        }
    }

    /// What the save's queue is given: the song, what its search needs before it, and what came
    /// after it. Not searched, the head and title go to `recorder` at once.
    private static func replay(_ tracks: ArraySlice<KeptTrack>, key: Int, head: StreamHead?, searchesStart: Bool,
                               recorder: QueuedSink) throws -> [StreamEvent] {
        let track = tracks[tracks.startIndex]
        var replay: [StreamEvent] = []
        replay.reserveCapacity(tracks.reduce(64) { $0 + $1.packets.count + $1.markers.count + 1 })
        if searchesStart {
            if let head { replay.append(.head(head)) }
            replay += track.leadIn?.events ?? []
            if let change = track.change { replay.append(.metadata(change)) }
        } else {
            // Not searched: the title opens the file where it arrived.
            if let head { try recorder.receive(.head(head)) }
            if let change = track.change { try recorder.receive(.metadata(change)) }
        }
        for kept in tracks {
            if kept.numbers.lowerBound != key, let change = kept.change { replay.append(.metadata(change)) }
            kept.appendEvents(from: kept.first, to: &replay)
        }
        return replay
    }

    private enum Reservation {
        case reserved(key: Int, isWhole: Bool)
        case refused(SaveResult)
    }

    /// At exit: the song being saved ends here (incomplete, unless its next title has arrived),
    /// and every file is written. A save asked for after this is refused.
    package func finish() {
        let queues = core.withLock { core -> [QueuedSink] in
            core.isFinished = true
            for save in core.saves { try? save.sink.receive(.ended(.userRequest)) }
            core.saves.removeAll()
            return core.queues
        }
        for queue in queues { queue.drain() }
    }
}

/// Between a save's split search and its recorder: lets through one song, from its title (where
/// the search put it) to the next title, which ends the file. A title that a recording would
/// take as the station announcing what plays after a gap (within one metadata interval of it)
/// only names the song, as it does for the recorder.
private final class SongBounds: StreamSink {
    private enum Part {
        case before
        /// `renames`: titles still to come that only name the song (the audio we tuned in to).
        case song(renames: Int)
        case after
    }

    private struct State {
        var part: Part
        var metaint: Int?
        /// Before the song: a gap not passed on yet, and the audio after it within one metadata
        /// interval, whose fate the song's title decides.
        var heldGap: Int?
        var afterGap: [StreamEvent] = []
        /// In the song: a title up to here announces what plays after a gap.
        var announcementEnd: Int?
    }

    private let recorder: any StreamSink
    private let state: Locked<State>

    /// `searchingStart`: the events begin before the song, and its title opens it; else they
    /// begin with the song, whose title the recorder has already. `renamedByTitle`: the song is
    /// the audio we tuned in to, still untitled: its first title names it. `metaint`: the
    /// station's, from the head the events begin with.
    init(_ recorder: any StreamSink, searchingStart: Bool, renamedByTitle: Bool, metaint: MetaintValue?) {
        self.recorder = recorder
        var initial = State(part: searchingStart ? .before : .song(renames: renamedByTitle ? 1 : 0))
        if case .interval(let interval) = metaint { initial.metaint = interval }
        state = Locked(initial)
    }

    /// Whether the next title has been placed: nothing more of the stream belongs to the song.
    var isComplete: Bool {
        state.withLock { state in
            if case .after = state.part { true } else { false }
        }
    }

    /// Audio held after a gap before the song, at most: the metadata interval is the station's.
    private static let mostHeldAfterGap = 256

    func receive(_ event: StreamEvent) throws {
        let (first, passes, ends) = state.withLock { state -> ([StreamEvent], Bool, Bool) in
            if case .head(let head) = event {
                if case .interval(let interval) = head.response.metaint { state.metaint = interval } else { state.metaint = nil }
            }
            switch (state.part, event) {
            case (.after, _):
                return ([], false, false)
            case (.before, .packet(let packet)):
                if let gap = state.heldGap, let metaint = state.metaint, packet.position < gap + metaint,
                   state.afterGap.count < Self.mostHeldAfterGap {
                    state.afterGap.append(event)
                }
                return ([], false, false)
            case (.before, .discontinuity(let position)):
                state.heldGap = position
                state.afterGap.removeAll()
                return ([], false, false)
            case (.before, .metadata(let change)):
                state.part = .song(renames: 0)
                // A title soon after a gap announces what plays: as for a recording, the song
                // then begins at the gap (and goes to incomplete/). Later, it is a cut like any other.
                defer {
                    state.heldGap = nil
                    state.afterGap = []
                }
                guard let gap = state.heldGap, let metaint = state.metaint, change.position <= gap + metaint else {
                    return ([], true, false)
                }
                return ([.discontinuity(position: gap)] + state.afterGap, true, false)
            case (.song(let renames), .metadata(let change)):
                let isAnnouncement = state.announcementEnd.map { change.position <= $0 } ?? false
                state.announcementEnd = nil
                if renames > 0 || isAnnouncement {
                    state.part = .song(renames: max(0, renames - 1))
                    return ([], true, false)
                }
                state.part = .after
                return ([], true, true)
            case (.song, .discontinuity(let position)):
                state.announcementEnd = state.metaint.map { position + $0 }
                return ([], true, false)
            case (.song, .ended):
                state.part = .after
                return ([], true, false)
            case (.before, _), (.song, _):
                // Before the song, what the recorder must know of the stream: a connection's
                // head, a format.
                return ([], true, false)
            }
        }
        for event in first { try recorder.receive(event) }
        if passes { try recorder.receive(event) }
        if ends { try recorder.receive(.ended(.endOfStream)) }
    }
}
