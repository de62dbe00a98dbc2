import AirtapIngest
import DequeModule
import ICYWire
import Locking
import Logging

/// Moves each title change to a better frame boundary before the recorders see it: into the gap
/// between songs when there is one near the title, else exactly where the title arrived.
///
/// An event transformer in front of a sink (a `TrackRecorder`, a `SingleFileRecorder`): it delays
/// the stream by the search window, and re-emits the same events with each `.metadata` moved (its
/// `position` updated, `announcedPosition` kept). Without padding every packet still goes through
/// exactly once and in order, so the recorders' frame-exact guarantee holds whatever the cut.
///
/// It decodes (mpg123) only the window around each title change, so it belongs behind the
/// recorder's `QueuedSink`, off the ingest thread: `QueuedSink(SplitAligner(recorder))`.
package final class SplitAligner: StreamSink {
    private let downstream: any StreamSink
    private let core: Locked<SplitAlignerCore>
    /// The downstream recorder, when it can keep what is held back on disk.
    private let heldBackSink: (any HeldBackAudioSink)?

    /// `joinsMidTrack`: the stream given starts inside a track whose title came before it (a
    /// song replayed from memory), so its first title is a change like any other, padded as one.
    /// `journal`: where the station's title delay is kept between runs (nil: learned for this
    /// run only).
    package init(_ downstream: any StreamSink, options: SplitOptions, logger: Logger, joinsMidTrack: Bool = false,
                journal: TitleDelayJournal? = nil, meter: sending any FrameLevelMeter = DecodingLevelMeter()) {
        self.downstream = downstream
        heldBackSink = downstream.heldBackAudio
        core = Locked(SplitAlignerCore(options: options, logger: logger, meter: meter, joinsMidTrack: joinsMidTrack,
                                       journal: journal))
    }

    /// The seconds of audio a stream must hold before a title for the search to cut it where it
    /// would in the whole stream: the farthest a search reads back (its window, or a title delay),
    /// a negative offset, the padding, and the frames that prime a decoder.
    package static func secondsNeededBefore(_ options: SplitOptions) -> Double {
        CutWindow.largestReachBefore(options) + max(0, -options.offset) + options.paddingNext + SplitAlignerCore.primingSeconds
    }

    package func receive(_ event: StreamEvent) throws {
        // One caller at a time (the recorder's serial queue): the lock is never contended, and
        // holding it while the downstream writes keeps the events in order.
        try core.withLock { core throws in
            // A closure, not `downstream.receive`: a method of an existential taken as a value
            // is a heap-allocated partial application, one per packet.
            try core.handle(event) { try downstream.receive($0) }
            if let heldBackSink, let held = core.heldBackDue() { heldBackSink.holdBack(held) }
        }
    }

    /// The end of a batch: what is held back goes to disk now if audio arrived since it last did,
    /// so a kill loses none of what was received. Then the downstream writes its own appends.
    package func batchEnded() {
        core.withLock { core in
            if let heldBackSink, let held = core.heldBackDue(minimumInterval: SplitAlignerCore.batchHeldBackInterval) {
                heldBackSink.holdBack(held)
            }
        }
        downstream.batchEnded()
    }

    package var statistics: SplitStatistics { core.withLock { $0.statistics } }
}

/// What the aligner did so far, for logs and the benchmark.
package struct SplitStatistics: Sendable, Hashable {
    package var titleChanges = 0
    /// Title changes cut somewhere else than where the title (plus offset) arrived.
    package var moved = 0
    /// Title changes cut in a silence.
    package var inSilence = 0
    /// Frames handed to the level meter, priming included (which a meter going on with a decoder
    /// does not decode).
    package var measuredFrames = 0
    /// The title delay in use after the last title change, if any.
    package var titleDelay: TitleDelay?
}

/// The aligner's state: a queue of held events and the titles still waiting for their window.
/// Used only under the aligner's lock.
struct SplitAlignerCore {
    /// One held event. Times are seconds of audio since the aligner started.
    enum Item {
        case packet(Packet, start: Double)
        /// A padding duplicate: emitted as a packet, never searched or counted as stream time.
        case copy(Packet)
        /// An event that passes in order: `.format`, or a title whose cut is decided.
        /// Indirect, like `.title`: rare, and boxed they keep every item as small as a packet's
        /// (the queue holds a few hundred items per station).
        indirect case event(StreamEvent)
        /// A title waiting for the audio after it; `at` is the stream time it arrived at.
        indirect case title(TrackChange, at: Double)
        /// Emitted already, waiting for the next compaction. Holds nothing: a packet left in
        /// place would keep its whole network read buffer alive (about 0.2 MB a station).
        case emitted
    }

    /// Priming: enough whole frames before a window to refill mpg123's bit reservoir (at most
    /// 511 bytes back) and settle its overlap-add state.
    static let primingBytes = 1024
    static let primingFrames = (minimum: 3, maximum: 16)
    /// Emitted items dropped at once from the front of the queue.
    static let compactionBatch = 16
    /// Audio kept beyond the window's need, so priming frames are still there.
    static let primingSeconds = 0.5
    /// The search decodes this much more of the window a side at a time, outward from the title,
    /// until the nearest silence is known. Shorter steps decode less past a gap's edge but add
    /// a decoder and its priming (3 frames) per step.
    static let searchStepSeconds = 0.5

    let options: SplitOptions
    private let logger: Logger
    var meter: any FrameLevelMeter
    var statistics = SplitStatistics()

    /// A deque: dropping emitted items from the front costs what they are, not the whole queue,
    /// so they go every few packets and the queue stays about as long as what it holds (an
    /// array grew to twice that between its compactions: 164 kB of items a station, not 82).
    private var items: Deque<Item> = []
    /// `items[..<head]` are already emitted, each left as `.emitted` until the next compaction
    /// (indices into `items` stay put in between).
    private var head = 0
    /// Index in `items` of the oldest `.title`, if any.
    private var firstPending: Int?
    /// End time of the newest packet.
    private var clock = 0.0
    /// Bytes of the held packets not emitted yet: what bounds the queue where stream time does
    /// not (a hostile Ogg stream whose pages all claim to hold no audio never moves the clock).
    private var heldBytes = 0
    /// Past this many held bytes the titles waiting are decided with what is here and the held
    /// audio goes on: far above what the widest search holds at any station's bitrate (about
    /// 40 s, 1.6 MB at 320 kbit/s).
    static let maximumHeldBytes = 8 << 20
    /// Where the next title's cut is searched: follows the delay in use.
    var search: CutWindow
    /// What the station's boundaries taught so far, and where it is kept between runs.
    var learner: TitleDelayLearner
    let journal: TitleDelayJournal?
    /// Audio kept behind the newest packet while no title waits.
    private var lookback: Double { max(0, -search.readFrom) + max(0, -options.offset) + options.paddingNext + Self.primingSeconds }

    /// Stream time at which the held-back audio was last handed to the recorder's disk.
    private var heldBackWrittenAt = 0.0
    /// How often the held-back audio goes to disk: what a kill can lose of it.
    static let heldBackInterval = 1.0
    /// At a batch's end, the held-back audio goes to disk once this much arrived since it last
    /// did. A queue that drains faster than the network loop hands over ends several batches
    /// per network read (microseconds apart): this keeps that to one tail write, not four.
    static let batchHeldBackInterval = 0.25

    /// Stream time at which the journal was last written (nil before the first write), the
    /// delay in use as written (as loaded, before it), and whether samples came since.
    private var journalWrittenAt: Double?
    private var journalDelay: TitleDelay?
    private var journalBehind = false
    /// The journal is written at most this often (stream seconds) while the delay in use stays,
    /// and at the stream's end: a station that changes titles every few seconds, times a
    /// thousand stations, must not create and rename a file at each of its gaps. A kill loses
    /// at most this much of what was learned, never the delay itself.
    static let journalInterval = 300.0

    /// Stream time of the silence the last title change cut in: not a gap for the next one.
    var usedSilence: Range<Double>?
    /// Titles decided since the start or the last discontinuity. The first one names the track
    /// already being recorded (we tuned in during it): the recorder renames that file instead of
    /// cutting, so padding copies there would land twice in the same file.
    private var titlesSinceDiscontinuity = 0

    // Scratch for one decision, emptied after it.
    var windowFrames: [Packet] = []
    var windowStart = 0.0
    var primingFrames: [Packet] = []
    var spectra = FrameSpectra(bandCount: 0)
    /// The last search with a delay found a silence where the cut may land: the next one looks
    /// for a silence first, decoding only as far as it must.
    var lastCorrectedFoundSilence = true

    init(options: SplitOptions, logger: Logger, meter: sending any FrameLevelMeter, joinsMidTrack: Bool = false,
         journal: TitleDelayJournal? = nil) {
        self.options = options
        self.logger = logger
        self.meter = meter
        self.journal = journal
        titlesSinceDiscontinuity = joinsMidTrack ? 1 : 0
        learner = options.learnsTitleDelay ? journal?.load() ?? TitleDelayLearner() : TitleDelayLearner()
        search = CutWindow(options: options, delay: CutWindow.delay(options: options, learned: learner.estimate))
        statistics.titleDelay = CutWindow.delay(options: options, learned: learner.estimate)
        journalDelay = learner.estimate
        // Room for what the search in use holds while a title waits (MP3 has 38 to 42 frames a
        // second, AAC up to 47), not for the farthest any search might reach: a station whose
        // delay is known holds about half that, and a thousand such stations would keep 20 MB of
        // empty slots. A search that comes to read further grows the queue once.
        let heldSeconds = -search.readFrom + search.readTo + abs(options.offset) + options.paddingPrevious
            + options.paddingNext + Self.primingSeconds
        items.reserveCapacity(Int(heldSeconds * 48) + 16)
    }

    mutating func handle(_ event: StreamEvent, emit: (StreamEvent) throws -> Void) rethrows {
        if options.isPassThrough { return try emit(event) }
        switch event {
        case .packet(let packet):
            items.append(.packet(packet, start: clock))
            clock += packet.duration
            heldBytes += packet.bytes.count
        case .metadata(let change):
            items.append(.title(change, at: clock))
            if firstPending == nil { firstPending = items.count - 1 }
        case .format, .connection:
            items.append(.event(event))
        case .head, .discontinuity, .ended:
            // The audio on either side is not one stream: decide with what is here, then let go of everything.
            while let index = firstPending { decide(at: index) }
            if case .ended = event, journalBehind { writeJournal() }
            if case .discontinuity = event { titlesSinceDiscontinuity = 0 }
            try release(upTo: .infinity, emit: emit)
            return try emit(event)
        }
        while let index = firstPending, case .title(_, let at) = items[index],
              clock + 1e-9 >= at + options.offset + search.readTo + options.paddingPrevious {
            decide(at: index)
        }
        var limit = clock - lookback
        if let index = firstPending, case .title(_, let at) = items[index] {
            // A waiting title still needs its window, its next-side padding and the priming before them.
            limit = min(limit, at + options.offset + search.readFrom - options.paddingNext - Self.primingSeconds)
        }
        try release(upTo: limit, emit: emit)
        if heldBytes > Self.maximumHeldBytes {
            while let index = firstPending { decide(at: index) }
            try release(upTo: .infinity, emit: emit)
        }
    }

    /// Writes what the learner knows to the journal: at once the first time in a run and when
    /// the delay in use is not the one the journal holds (it came, went, or moved further than
    /// the learner's agreement, even in small steps), else once `journalInterval` has passed.
    mutating func keepLearned() {
        guard journal != nil else { return }
        journalBehind = true
        let changed = switch (journalDelay, learner.estimate) {
        case (nil, nil): false
        case (let written?, let now?): abs(written.seconds - now.seconds) > TitleDelayLearner.agreement
        default: true
        }
        if changed || journalWrittenAt.map({ clock - $0 >= Self.journalInterval }) ?? true { writeJournal() }
    }

    private mutating func writeJournal() {
        journal?.save(learner)
        journalWrittenAt = clock
        journalDelay = learner.estimate
        journalBehind = false
    }

    /// Every `heldBackInterval` of stream time: the packets held now, in the order they will be
    /// emitted (padding copies included), for `HeldBackAudioSink`. Nil in between.
    mutating func heldBackDue(minimumInterval: Double = Self.heldBackInterval) -> [Packet]? {
        guard !options.isPassThrough, clock - heldBackWrittenAt >= minimumInterval else { return nil }
        heldBackWrittenAt = clock
        // Room for all of them at once: a few hundred packets every second, which appending
        // into a growing array would copy several times over.
        var held: [Packet] = []
        held.reserveCapacity(items.count - head)
        for item in items[head...] {
            switch item {
            case .packet(let packet, _), .copy(let packet): held.append(packet)
            case .event, .title, .emitted: break
            }
        }
        return held
    }

    /// Emits held items from the front while they are packets ending at or before `limit`, or
    /// events; stops at a waiting title.
    private mutating func release(upTo limit: Double, emit: (StreamEvent) throws -> Void) rethrows {
        while head < items.count {
            switch items[head] {
            case .packet(let packet, let start):
                guard start + packet.duration <= limit + 1e-9 else { return compact() }
                try emit(.packet(packet))
                heldBytes -= packet.bytes.count
            case .copy(let packet):
                try emit(.packet(packet))
            case .event(let event):
                try emit(event)
            case .title:
                return compact()
            case .emitted:
                break
            }
            items[head] = .emitted
            head += 1
        }
        compact()
    }

    private mutating func compact() {
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            firstPending = nil
            head = 0
        } else if head >= Self.compactionBatch {
            items.removeFirst(head)
            firstPending = firstPending.map { $0 - head }
            head = 0
        }
    }

    /// Chooses the cut for the title at `items[index]` and puts it there as a plain event.
    private mutating func decide(at index: Int) {
        guard case .title(let change, let at) = items[index] else { return }
        statistics.titleChanges += 1
        let arrival = at + options.offset
        // A new link's title is exactly where its audio starts: no delay to correct.
        let search = change.source.startsLink ? CutWindow(options: options, delay: nil) : self.search
        let low = gatherWindow(around: index, from: arrival + search.readFrom, to: arrival + search.readTo)
        let titleBoundary = index - low
        let reference = boundary(nearest: arrival + search.target, from: titleBoundary, at: at)

        // The first title since the stream began or came back names the song already playing
        // (the recorders name that file, they do not cut it), unless it is stamped with the audio
        // it starts: no change to find, so no search. One there would also be the dearest kind:
        // with a delay and no silence, a whole window of spectra, for every station at once.
        let namesPlaying = titlesSinceDiscontinuity == 0 && !change.source.isTimed
        var choice = (boundary: reference, reason: search.target == 0 ? CutPlacement.Reason.title : .delay)
        // Frames without a duration (Ogg pages carry none of their own) have no frame arithmetic:
        // their cut stays at the title, as it does when the meter cannot measure them.
        if options.searchesSilence, !namesPlaying, let first = windowFrames.first, first.duration > 0 {
            gatherPriming(before: low)
            if let found = searchWindow(search, reference: reference, title: titleBoundary, frameSeconds: first.duration, arrival: arrival) {
                choice = found
            } else {
                logger.debug("split: cannot measure the window; cutting at the title")
            }
        }
        let cut = choice.boundary
        let shift = cut < windowFrames.count ? (windowStart + Double(cut) * (windowFrames.first?.duration ?? 0)) - at
            : windowFrames.reduce(windowStart) { $0 + $1.duration } - at
        let placement = CutPlacement(reason: choice.reason, shiftSeconds: shift, titleDelaySeconds: search.delaySeconds)
        // Move the title: packets stay where they are, so the stream is unchanged but for where
        // the event falls. Unmoved, it keeps the byte position it arrived at.
        var markerIndex = index
        if cut != titleBoundary {
            statistics.moved += 1
            let position = cut < windowFrames.count ? windowFrames[cut].position
                : windowFrames.last.map { $0.byteRange.upperBound } ?? change.position
            items.remove(at: index)
            markerIndex = low + cut
            items.insert(.event(.metadata(change.moved(to: position, placement: placement))), at: markerIndex)
            logger.debug("split: cut moved", metadata: [
                "title": "\(change.info.raw)", "frames": "\(cut - titleBoundary)", "position": "\(position)",
                "by": "\(choice.reason.rawValue)",
            ])
        } else {
            items[index] = .event(.metadata(change.moved(to: change.position, placement: placement)))
        }
        if titlesSinceDiscontinuity > 0 { markerIndex = insertPadding(around: markerIndex) }
        titlesSinceDiscontinuity += 1
        // Neither the packets (each would keep its read buffer alive until the next title) nor
        // the room: titles come minutes apart, and a thousand stations' idle scratch is 30 MB.
        windowFrames = []
        primingFrames = []
        spectra = FrameSpectra(bandCount: 0)

        firstPending = nil
        var next = markerIndex + 1
        while next < items.count {
            if case .title = items[next] { firstPending = next; break }
            next += 1
        }
    }

    /// Fills `windowFrames` with the packets from `start` to `end` (stream times) around the title
    /// at `items[index]`, never past another event (an earlier title's cut, a format change,
    /// padding), so titles stay in their order. Returns the index in `items` of the first.
    private mutating func gatherWindow(around index: Int, from start: Double, to end: Double) -> Int {
        var low = index
        while low > head, case .packet(_, let packetStart) = items[low - 1], packetStart + 1e-9 >= start {
            low -= 1
        }
        var high = index + 1
        while high < items.count, case .packet(let packet, let packetStart) = items[high],
              packetStart + packet.duration <= end + 1e-9 {
            high += 1
        }
        windowFrames.removeAll(keepingCapacity: true)
        if case .title(_, let at) = items[index] { windowStart = at }
        for position in low..<high where position != index {
            guard case .packet(let packet, let packetStart) = items[position] else { continue }
            if windowFrames.isEmpty { windowStart = packetStart }
            windowFrames.append(packet)
        }
        return low
    }

    /// The window's frame boundary nearest stream time `target`, walking frame by frame from
    /// `boundary`, which lies at stream time `time`.
    private func boundary(nearest target: Double, from boundary: Int, at time: Double) -> Int {
        guard target != time else { return boundary }
        var reference = boundary
        var time = time
        while reference < windowFrames.count, time + windowFrames[reference].duration / 2 <= target {
            time += windowFrames[reference].duration
            reference += 1
        }
        while reference > 0, time - windowFrames[reference - 1].duration / 2 > target {
            time -= windowFrames[reference - 1].duration
            reference -= 1
        }
        return reference
    }

    /// Previous-side padding: copies of the packets just after the cut, before the title; next-side:
    /// copies of the packets just before it, after the title. Returns the title's new index.
    private mutating func insertPadding(around marker: Int) -> Int {
        var marker = marker
        if options.paddingPrevious > 0 {
            var copies: [Item] = []
            var seconds = 0.0
            var position = marker + 1
            while seconds + 1e-9 < options.paddingPrevious, position < items.count, case .packet(let packet, _) = items[position] {
                copies.append(.copy(packet))
                seconds += packet.duration
                position += 1
            }
            items.insert(contentsOf: copies, at: marker)
            marker += copies.count
        }
        if options.paddingNext > 0 {
            var copies: [Item] = []
            var seconds = 0.0
            var position = marker - 1
            // Skips the previous-side copies just inserted: they are not the stream before the cut.
            while position >= head, case .copy = items[position] { position -= 1 }
            while seconds + 1e-9 < options.paddingNext, position >= head, case .packet(let packet, _) = items[position] {
                copies.append(.copy(packet))
                seconds += packet.duration
                position -= 1
            }
            items.insert(contentsOf: copies.reversed(), at: marker + 1)
        }
        return marker
    }

    /// The packets just before `index` (titles between them do not break the audio), oldest first.
    private mutating func gatherPriming(before index: Int) {
        primingFrames.removeAll(keepingCapacity: true)
        var bytes = 0
        var position = index - 1
        while position >= head, primingFrames.count < Self.primingFrames.maximum,
              primingFrames.count < Self.primingFrames.minimum || bytes < Self.primingBytes {
            switch items[position] {
            case .packet(let packet, _):
                primingFrames.append(packet)
                bytes += packet.bytes.count
            case .event(.metadata):
                break
            default:
                position = head  // a format change or padding: the audio before it is another stream
            }
            position -= 1
        }
        primingFrames.reverse()
    }
}
