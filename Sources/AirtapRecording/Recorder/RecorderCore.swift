#if canImport(Glibc)
import Glibc
#endif
import AirtapIngest
import AirtapStations
import AirtapSupport
import AudioFingerprinting
import FoundationEssentials
import ICYWire
import ID3Tagging
import Locking
import Logging
import RecordingRules

/// The recorder's state; only ever used under the recorder's lock.
struct RecorderCore {
    let station: Station
    let options: RecordingOptions
    private let logger: Logger
    private let stop: @Sendable (StopReason) -> Void

    private(set) var stationName: String
    private(set) var head: ResponseHead?
    private var current: OpenTrack?
    /// The title for the next file, when it arrived between files.
    private var pendingInfo: TrackInfo?
    /// Where the split search placed the newest title change's cut, for the file it starts.
    private var pendingCut: CutPlacement?
    /// Where the next file begins (what its first title and its completeness depend on).
    private var nextStart = TrackStart.connection
    /// The stream is a whole program (`StreamHead.isWholeProgram`): its end of stream completes
    /// the track in progress instead of cutting it short.
    private var isWholeProgram = false
    /// Files of other formats left open by a format change before the floor, most recently used
    /// last: audio that returns to a format goes on in its file instead of starting another.
    private var parked: [OpenTrack] = []
    /// How many files of other formats stay open at most: every codec and rate pair a frame
    /// stream can switch between (MPEG's three layers at nine rates, ADTS's thirteen rates) fits,
    /// so flapping among them is bounded. Beyond it (Vorbis links at ever new rates) the least
    /// recently used is finished, and each of those files holds at least a whole link.
    static let parkedLimit = 27
    /// After a gap: titles up to this stream position are the new connection's announcement of
    /// what is playing (its first metadata block), not a track change.
    private var announcementEnd: Int?
    private var sequence = 0
    /// The track floor's warning was given on this connection.
    private var warnedOfShortTracks = false
    private var warnedOfFormatFlapping = false
    private var warnedOfTrackStarts = false
    private var trackStarts: TrackStartBudget?
    /// Reached --max-size or failed: later events change nothing.
    private var isStopped = false
    private(set) var failure: AirtapError?
    private let hooks: TrackDoneHooks?
    private(set) var status = RecorderStatus()
    /// A bare URL's named folder, locked under the station's id for as long as this recorder
    /// lives (`StationLocks.claimNamedFolder`); claimed once, at the first answer.
    private var namedFolderLock: RecordingLock?
    private var hasClaimedNamedFolder = false

    /// What began a file.
    enum TrackStart {
        /// We tuned in (or came back after a gap) during it: partial, its first title names it,
        /// and it is exempt from the floor (the next title must end it).
        case connection
        /// A change of codec or rate cut the file before it (not an Ogg link: those start whole):
        /// partial and named by its first title like a connection's first track, but under the floor.
        case formatChange
        /// A title change cut the file before it.
        case title
    }

    /// The format a file keeps: audio of another codec or rate never joins it.
    struct FileFormat: Hashable {
        let codec: AudioCodec
        let sampleRate: Int
    }

    struct OpenTrack {
        let file: TrackFile
        var info: TrackInfo?
        let start: TrackStart
        let startedAt: Date
        let sequence: Int
        /// Where its start was cut, when a title change began it.
        let cut: CutPlacement?
        /// Nil when neither loudness nor a fingerprint is wanted (or the codec has no decoder).
        let listeners: TrackListeners?
        /// The stream position of its first packet.
        let firstPosition: Int

        var isFirstOfConnection: Bool { start == .connection }
        /// Began mid-song: goes to incomplete/, and the first title names the audio already in it.
        var isPartial: Bool { start != .title }
        var format: FileFormat { FileFormat(codec: file.codec, sampleRate: file.sampleRate) }
    }

    init(station: Station, options: RecordingOptions, logger: Logger, stop: @escaping @Sendable (StopReason) -> Void) {
        self.station = station
        self.options = options
        self.logger = logger
        self.stop = stop
        self.stationName = station.name
        self.trackStarts = options.trackStarts
        self.hooks = options.trackDoneHooks ?? options.onTrackDone.map { TrackDoneHooks(command: $0, logger: logger) }
    }

    /// The station's own folder below `--out`: part files and `incomplete/` live here.
    var stationFolderName: String { SafeFileName.component(stationName) ?? "station" }

    /// Opens a folder below `--out`, one level at a time, refusing links.
    private func folder(_ components: [String]) throws(AirtapError) -> OutputFolder {
        try OutputFolder.open(components, below: options.outputDirectory)
    }

    mutating func startsAtTrackBoundary() {
        nextStart = .title
    }

    mutating func handle(_ event: StreamEvent) {
        guard !isStopped else { return }
        switch event {
        case .head(let head):
            // A reconnect that splices seamlessly continues the same file; a gap comes as
            // `.discontinuity`. The very first track is partial anyway (`nextStart`).
            self.head = head.response
            isWholeProgram = head.isWholeProgram
            // A program heard from its beginning: its first track is whole, not joined mid-song.
            if head.isWholeProgram, current == nil, status.filesWritten == 0, parked.isEmpty { nextStart = .title }
            // A bare URL takes the station's own name for its folder and album, once, before the
            // first file: a later connection's different name does not split the recording.
            if station.isNamedByStream, current == nil, status.filesWritten == 0, stationName == station.name,
               let name = Station.name(fromICYName: head.response.icyName) {
                stationName = name
            }
        case .format(let header):
            changeFormat(to: FileFormat(codec: header.codec, sampleRate: header.sampleRate))
        case .packet(let packet):
            record(packet)
        case .metadata(let change):
            logger.info("title: \(change.info.raw)", metadata: ["position": "\(change.position)"])
            pendingCut = change.placement
            receive(change.info, at: change.position, timedAt: change.source.isTimed ? change.announcedPosition : nil)
        case .discontinuity(let position):
            // The song in progress most likely goes on after the gap, and a reconnect that
            // announces the same title again is no change (nothing arrives): its file keeps
            // the title, so the next title cuts instead of naming it.
            pendingInfo = current?.info ?? pendingInfo
            closeCurrent(complete: false)
            closeParked()
            nextStart = .connection
            warnedOfShortTracks = false
            warnedOfFormatFlapping = false
            warnedOfTrackStarts = false
            if case .interval(let metaint) = head?.metaint { announcementEnd = position + metaint }
        case .connection:
            break
        case .ended(let reason):
            // The end of a whole program is the end of its last track too, unless that one began
            // after a gap.
            let programEnded = isWholeProgram && reason == .endOfStream
            closeCurrent(complete: programEnded && current?.isPartial == false)
            closeParked()
        }
    }

    /// A different codec or rate cannot continue the same file (one Xing header, one duration:
    /// players would mistime the rest; an Opus link in a `.ogg` file). A file that reached the
    /// floor ends here; one that did not stays open beside the new format's, so a station that
    /// flaps between formats gets a file per format and floor, not one per change.
    private mutating func changeFormat(to format: FileFormat) {
        if let open = current {
            guard open.format != format else { return }
            current = nil
            let isLongEnough = options.trackFloor.allowsCut(after: open.file.seconds, bytes: open.file.audioByteCount)
            if isLongEnough, takeTrackStart(at: nil) {
                current = open
                closeCurrent(complete: false)
            } else {
                // Refused by the budget (which said so), the file waits parked as below the floor.
                if !isLongEnough, !warnedOfFormatFlapping {
                    warnedOfFormatFlapping = true
                    logger.warning("\(options.trackFloor.formatWarning)")
                }
                parked.append(open)
                // On disk now, as at a batch's end: a kept file gets no batch ends of its own.
                do {
                    try open.file.writeAppends()
                } catch {
                    fail(error)
                    return
                }
                if parked.count > Self.parkedLimit {
                    current = parked.removeFirst()
                    closeCurrent(complete: false)
                }
            }
            if !isStopped, !parked.contains(where: { $0.format == format }) {
                // A new Ogg link starts exactly here, whole, and its title comes next; a frame
                // stream's new format starts mid-song.
                nextStart = open.file.codec.isChained && format.codec.isChained ? .title : .formatChange
            }
        }
        guard !isStopped, let index = parked.firstIndex(where: { $0.format == format }) else { return }
        current = parked.remove(at: index)
    }

    /// Finishes the files a format change left open, into incomplete/ (each is a fragment).
    private mutating func closeParked() {
        let resumed = current
        while !parked.isEmpty {
            current = parked.removeFirst()
            closeCurrent(complete: false)
        }
        if isStopped, let resumed {
            salvage(resumed.file)
        } else {
            current = resumed
        }
    }

    mutating func writeAppends() {
        guard !isStopped, let current else { return }
        do {
            try current.file.writeAppends()
        } catch {
            fail(error)
        }
    }

    /// The appends first: their write error fails the recording, as at an append (a failed
    /// write drops what it held). The tail itself is best effort: it is a kill's insurance,
    /// rewritten a second later, and its audio is appended for real in turn.
    mutating func holdBack(_ packets: [Packet]) {
        guard !isStopped, let current else { return }
        do {
            try current.file.writeAppends()
        } catch {
            fail(error)
            return
        }
        try? current.file.writeHeldBack(packets)
    }

    /// `timedAt`: where a title stamped with the audio it starts (HLS timed metadata) arrived,
    /// before a split search moved its cut; one after the connection's first audio starts its
    /// song there, whole.
    private mutating func receive(_ info: TrackInfo, at position: Int, timedAt: Int?) {
        let isAnnouncement = announcementEnd.map { position <= $0 } ?? false
        announcementEnd = nil
        guard var open = current else {
            pendingInfo = info
            status.title = info.raw
            return
        }
        status.title = info.raw
        let startsSongAfterJoin = open.isFirstOfConnection && open.info == nil && timedAt.map { $0 > open.firstPosition } == true
        if open.isPartial, !startsSongAfterJoin, open.info == nil || (open.isFirstOfConnection && isAnnouncement) {
            // The first title of a connection names the audio already received: the station
            // announces what is playing, and we tuned in during it.
            open.info = info
            current = open
            writeProvisionalTag(open)
            markKeeping(open)
            return
        }
        let isLongEnough = open.isFirstOfConnection
            || options.trackFloor.allowsCut(after: open.file.seconds, bytes: open.file.audioByteCount)
        if !isLongEnough || !takeTrackStart(at: position) {
            // Too short to be a track of its own, or too many tracks began this minute: its audio
            // stays here, and the new title names what follows in the same file (an Ogg link
            // joins it as the next link of a chain).
            if !isLongEnough, !warnedOfShortTracks {
                warnedOfShortTracks = true
                logger.warning("\(options.trackFloor.warning)", metadata: ["position": "\(position)"])
            }
            // No provisional tag rewrite: a flood of titles would cost a tag write each. The
            // final tag at the close names the file; a kill leaves the title it started with.
            open.info = info
            current = open
            markKeeping(open)
            return
        }
        closeCurrent(complete: !open.isPartial)
        closeParked()
        pendingInfo = info
    }

    /// Whether the budget lets a track start now (it counts if so); warns once per connection
    /// when it does not. `position`: the title's, for the warning.
    private mutating func takeTrackStart(at position: Int?) -> Bool {
        guard var budget = trackStarts else { return true }
        defer { trackStarts = budget }
        if budget.takeStart(at: options.monotonicNow()) { return true }
        if !warnedOfTrackStarts {
            warnedOfTrackStarts = true
            logger.warning("\(budget.warning)", metadata: position.map { ["position": "\($0)"] } ?? [:])
        }
        return false
    }

    private mutating func record(_ packet: Packet) {
        if current == nil {
            do {
                current = try open(first: packet)
            } catch {
                fail(error)
                return
            }
        }
        // The two references it needs, not a copy of the whole track (its title, cut and names)
        // at every packet.
        guard let file = current?.file else { return }
        do {
            try file.append(packet)
        } catch {
            fail(error)
            return
        }
        current?.listeners?.add(packet)
        status.bytesWritten += packet.bytes.count
        status.trackSeconds = file.seconds
        if let maxBytes = options.maxBytes, status.bytesWritten >= maxBytes {
            // Here, not when the stop reaches the writer: what the queue and the split window
            // still hold would overshoot the limit by seconds.
            logger.notice("reached --max-size (\(maxBytes) bytes)")
            closeCurrent(complete: false)
            closeParked()
            isStopped = true
            stop(.limitReached)
        }
    }

    private mutating func open(first packet: Packet) throws(AirtapError) -> OpenTrack {
        sequence += 1
        let info = pendingInfo
        pendingInfo = nil
        let startedAt = Date()
        let start = nextStart
        nextStart = .title
        let cut = start == .title ? pendingCut : nil
        pendingCut = nil
        // A bare URL's folder is settled with its first file: what a killed run of it left
        // there is finished first (a station of stations.json had that done before it started).
        if station.isNamedByStream, !hasClaimedNamedFolder {
            hasClaimedNamedFolder = true
            namedFolderLock = StationLocks.claimNamedFolder(stationFolderName, below: options.outputDirectory,
                                                            stationID: station.id, logger: logger)
        }
        let folder = try folder([stationFolderName])
        let base = names(for: info, startedAt: startedAt, sequence: sequence).last ?? "track"
        let ext = packet.header.codec.fileExtension
        for attempt in 1...1000 {
            let partName = "\(SafeFileName.numbered(base, attempt)).\(ext).part"
            let oggTags = options.writesTags && packet.header.codec.tagFormat == .vorbisComments ? oggTags(sequence: sequence, startedAt: startedAt) : []
            // Nil only when the name is taken (EEXIST: another file or a link of that name);
            // a full disk or any other error throws at once, leaving no file.
            if let file = try TrackFile(in: folder, partName: partName, first: packet, reservesTagSpace: options.writesTags,
                                        oggTags: oggTags) {
                logger.debug("recording", metadata: ["file": "\(file.partPath)"])
                let listeners = TrackListeners(codec: packet.header.codec,
                                               measuresLoudness: options.writesTags && options.measuresLoudness,
                                               fingerprints: options.library != nil)
                let track = OpenTrack(file: file, info: info, start: start, startedAt: startedAt, sequence: sequence,
                                      cut: cut, listeners: listeners, firstPosition: packet.position)
                writeProvisionalTag(track)
                markKeeping(track)
                return track
            }
        }
        throw .localIO("too many files named \(base) in \(folder.path)")
    }

    private mutating func closeCurrent(complete: Bool) {
        guard let open = current else { return }
        current = nil
        let seconds = open.file.seconds
        // Ogg says where a link ends: one whose EOS page is in the file is whole, even when the
        // stream ends right after it (a playlist's last file); without it, it was cut short.
        let isWholeLink = open.file.codec.isChained && open.file.endsAtLinkEnd && !open.isPartial
        var isComplete = complete || isWholeLink
        if isComplete, let minimum = options.minimumTrackSeconds, seconds < minimum { isComplete = false }
        if isComplete, open.file.codec.isChained, !open.file.endsAtLinkEnd { isComplete = false }

        if case .discard(let reason) = keepDecision(for: open) {
            open.file.discard()
            logger.notice("not kept: \(reason)", metadata: [
                "title": "\(open.info?.raw ?? "")", "seconds": "\(seconds.formatted(decimals: 1))",
            ])
            return
        }
        let components = names(for: open.info, startedAt: open.startedAt, sequence: open.sequence)
        let ext = open.file.codec.fileExtension
        let targetFolder = isComplete ? Array(components.dropLast()) : [stationFolderName, "incomplete"]
        let targetName = (components.last ?? "track") + ".\(ext)"
        let replayGain = open.listeners?.replayGain
        do {
            try open.file.complete(tag: options.writesTags ? tag(for: open, replayGain: replayGain) : nil,
                                   id3v1: options.writesID3v1,
                                   oggComments: replayGain?.oggFields(for: open.file.codec, opusHead: open.file.opusHead) ?? [])
            let target = try folder(targetFolder)
            let path = try moveWithoutOverwriting(open.file.partName, in: open.file.folder, to: targetName, in: target)
            var track = RecordedTrack(path: path, info: open.info, isComplete: isComplete, frameCount: open.file.frameCount,
                                      audioByteCount: open.file.audioByteCount, seconds: seconds, replayGain: replayGain,
                                      codec: open.file.codec, bitrate: open.file.firstBitrate, startedAt: open.startedAt,
                                      cut: open.cut)
            if let library = options.library {
                track.fingerprint = open.listeners?.finishFingerprint()
                if case .duplicate = library.trackFinished(track, stationID: station.id, stationName: stationName,
                                                           recordingFolder: options.outputDirectory) {
                    // By the folder's descriptor: a folder on the way swapped for a link since the move cannot redirect it.
                    _ = unlinkat(target.descriptor, String(path.split(separator: "/").last ?? ""), 0)
                    return
                }
            }
            // Reported, not kept: a recording that runs for months holds nothing per track.
            options.onFileWritten?(track)
            status.filesWritten += 1
            logger.info("saved \(isComplete ? "track" : "incomplete track")", metadata: [
                "file": "\(path)", "seconds": "\(seconds.formatted(decimals: 1))",
            ])
            if isComplete, let hooks {
                hooks.run(for: track, station: stationName)
            }
        } catch {
            salvage(open.file)
            fail(error)
        }
    }

    /// Whether the track is kept, by the title it has now.
    private func keepDecision(for track: OpenTrack) -> KeepRule.Decision {
        options.keepRule.keepsEverything ? .keep : options.keepRule.decide(title: track.info?.raw)
    }

    /// Names the part file after the decision its title makes now, so that what a kill leaves
    /// of a track not kept is deleted by the next start, not finished into incomplete/.
    private func markKeeping(_ track: OpenTrack) {
        guard !options.keepRule.keepsEverything else { return }
        track.file.markDiscarded(!keepDecision(for: track).isKept)
    }

    /// The tag as known so far, in the part file: what a killed run leaves is tagged. Best
    /// effort: the final tag is written when the track closes, and a write error shows there.
    private func writeProvisionalTag(_ track: OpenTrack) {
        guard options.writesTags else { return }
        try? track.file.writeProvisionalTag(tag(for: track))
    }

    private mutating func fail(_ error: AirtapError) {
        logger.error("\(error)")
        guard !isStopped else { return }
        isStopped = true
        failure = error
        if let open = current {
            current = nil
            salvage(open.file)
        }
        for open in parked { salvage(open.file) }
        parked = []
        stop(.error(error))
    }

    /// Keeps what was received when a file cannot be finished: closed as it is, its `.part`
    /// moved into incomplete/, so no `.part` is left behind and nothing received is deleted
    /// (but a track not kept, which leaves nothing).
    private func salvage(_ file: TrackFile) {
        guard !file.isDiscarded else {
            file.discard()
            return
        }
        file.abandon()
        let name = String(file.partName.dropLast(".part".count))
        guard let incomplete = try? folder([stationFolderName, "incomplete"]) else { return }
        _ = try? moveWithoutOverwriting(file.partName, in: file.folder, to: name, in: incomplete)
    }
}
