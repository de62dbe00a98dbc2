#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import Descriptors
import FoundationEssentials
import ICYWire
import ID3Tagging
import SystemPackage

/// One recorded track on disk while it grows: `NAME.mp3.part`, with room reserved at the start
/// for the ID3v2 tag and the Xing frame, which are written in place once the track is complete.
///
/// Packets are written with `writev` straight from their buffers, a batch at a time: no copy
/// in user space, a system call per ~64 KiB or per second of audio, whichever comes first, so a
/// killed process loses at most about a second of what reached the recorder. While the track
/// grows, its reserved tag room holds a provisional tag (the title known so far), so a `.part`
/// left by a killed run can be finished later (`LeftoverParts`). Used from one queue (the recorder's).
final class TrackFile {
    /// The folder the part file is in: every later step (the tag's scratch file, the rename)
    /// happens relative to it, never through a path a planted link could redirect. Its
    /// descriptor is let go while the track grows (a station holds its socket and its part file,
    /// no more) and reopened, checked to be the same folder, for those steps.
    let folder: OutputFolder
    /// `NAME.EXT.part`, or that plus `discardedSuffix` while the track is not to be kept.
    private(set) var partName: String
    private let keptPartName: String
    var partPath: String { folder.path + "/" + partName }
    let codec: AudioCodec
    private(set) var frameCount = 0
    private(set) var sampleCount = 0
    private(set) var audioByteCount = 0
    /// Ogg: the last page written was its link's EOS page (the whole link is in the file).
    private(set) var endsAtLinkEnd = false
    let sampleRate: Int
    private var descriptor: Int32
    private let tagReserve: Int
    private let xing: XingFrame?
    private(set) var firstBitrate: Int?
    private var isConstantBitrate = true
    private var pending: [ArraySlice<UInt8>] = []
    private var pendingByteCount = 0
    private var pendingSampleCount = 0
    /// The stream bytes of the pending packets' leading run that follow one another, not
    /// rewritten (an Ogg comment rewrite changes bytes and lengths):
    /// what of it the last held-back tail put at the file's position is on disk already, and
    /// `flush` moves past it instead of writing it again.
    private var pendingRun: Range<Int>?
    private var pendingRunIsOpen = false
    /// Where the last appended packet ended in the stream: a packet that starts before it (a
    /// padding copy, a numbering that started again) means the appends left the last tail's
    /// order; its map is forgotten rather than trusted to name each byte once.
    private var appendedStreamEnd = Int.min
    /// Reused by `flush`, which runs once a second.
    private var appendVectors: [iovec] = []
    /// Where the last `writeHeldBack` tail ended: a shorter tail must cut the file back, a tail
    /// as long or longer overwrites it and needs no truncate.
    private var heldBackEnd: off_t = 0
    /// Where the last tail began, and the stream bytes its packets held when they followed one
    /// another (no padding copy among them): what of it lies past the appends is on disk.
    private var heldBackStart: off_t = 0
    private var heldBackSpan: Range<Int>?
    /// Reused by `writeHeldBack`, which runs once a second.
    private var heldBackVectors: [iovec] = []
    /// A tail may lie past the appends: `cutHeldBack` has something to cut. Once it has cut,
    /// the offset may no longer say where the appends end (`complete` reopens the file to
    /// append), and a second cut there would empty the file.
    private var tailMayLieBeyond = false

    private static let batchBytes = 64 * 1024
    /// IOV_MAX on Linux; Glibc's macro does not reach Swift.
    private static let maxVectors = 1024
    /// Room for the tag when it is rendered at the end: enough for long titles; larger tags
    /// fall back to rewriting the file once.
    static let defaultTagReserve = 4096

    var seconds: Double { sampleRate > 0 ? Double(sampleCount) / Double(sampleRate) : 0 }

    /// Ogg: adds the recorder's tags to the link's comment header as the pages go by.
    private var oggComments: OggCommentRewriter?
    /// Ogg Opus: the identification packet the file starts with (its output gain is what
    /// `R128_TRACK_GAIN` adds to); nil for a file that starts mid-link, and for other codecs.
    let opusHead: ArraySlice<UInt8>?

    /// Creates the part file `partName` in `folder`; `first` decides the codec and the Xing
    /// frame's format. Nil when the name is taken (by a file or a link: the caller takes the
    /// next name); any other failure (a full disk, a file-size limit) throws, leaving no file.
    /// `oggTags`: Vorbis comment fields to write into an Ogg link's comment header.
    init?(in folder: OutputFolder, partName: String, first: Packet, reservesTagSpace: Bool,
          oggTags: [VorbisComments.Field] = []) throws(AirtapError) {
        oggComments = oggTags.isEmpty || first.header.codec.tagFormat != .vorbisComments ? nil : OggCommentRewriter(fields: oggTags)
        self.folder = folder
        self.partName = partName
        self.keptPartName = partName
        self.codec = first.header.codec
        self.sampleRate = first.header.sampleRate
        if first.header.codec == .opus, case .page(let page) = OggPage.parse(first.bytes), page.isBeginningOfStream {
            opusHead = page.body
        } else {
            opusHead = nil
        }
        guard let descriptor = try folder.createFile(partName) else { return nil }
        self.descriptor = descriptor
        // AAC (ADTS) files start with the same ID3v2 tag (ffprobe, mutagen and players read ID3v2
        // before ADTS) but carry no Xing frame (an MPEG frame) and no ID3v1 at the end.
        let isMP3 = codec == .mp3
        tagReserve = reservesTagSpace && (isMP3 || codec == .aac) ? Self.defaultTagReserve : 0
        xing = isMP3 ? XingFrame(matching: first.bytes.prefix(4)) : nil
        let reserved = tagReserve + (xing?.length ?? 0)
        if reserved > 0 {
            do {
                try write(contentsOf: [UInt8](repeating: 0, count: reserved))
            } catch {
                // Nothing received is in it yet: leave no file behind.
                close(descriptor)
                self.descriptor = -1
                unlinkat(folder.descriptor, partName, 0)
                throw error
            }
        }
        folder.release()
    }

    /// The part file `partPath` (`--single`, `relay --to`: a path the user chose); nil when taken.
    convenience init?(partPath: String, first: Packet, reservesTagSpace: Bool) throws(AirtapError) {
        let url = URL(fileURLWithPath: partPath)
        try self.init(in: OutputFolder.root(url.deletingLastPathComponent().path), partName: url.lastPathComponent,
                      first: first, reservesTagSpace: reservesTagSpace)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    func append(_ packet: Packet) throws(AirtapError) {
        endsAtLinkEnd = packet.header.endsLink
        if oggComments != nil {
            switch oggComments?.rewrite(packet.bytes) {
            case .held:
                return
            case .replaced(let bytes):
                try appendBytes(bytes[...], packet: packet, isStreamBytes: false)
                return
            case .unchanged, nil:
                break
            }
        }
        // An Ogg comment rewrite may have changed a length before: the file no longer maps
        // onto stream positions (as `packetsOnDisk` knows too).
        try appendBytes(packet.bytes, packet: packet, isStreamBytes: oggComments == nil)
    }

    private func appendBytes(_ bytes: ArraySlice<UInt8>, packet: Packet, isStreamBytes: Bool) throws(AirtapError) {
        frameCount += 1
        sampleCount += packet.sampleCount
        audioByteCount += bytes.count
        let bitrate = packet.header.bitrate
        if firstBitrate == nil { firstBitrate = bitrate } else if bitrate != firstBitrate { isConstantBitrate = false }
        if packet.position < appendedStreamEnd { heldBackSpan = nil }
        appendedStreamEnd = packet.position + packet.bytes.count
        if pending.isEmpty {
            pendingRun = isStreamBytes ? packet.position..<packet.position + bytes.count : nil
            pendingRunIsOpen = isStreamBytes
        } else if pendingRunIsOpen {
            if isStreamBytes, let run = pendingRun, run.upperBound == packet.position {
                pendingRun = run.lowerBound..<packet.position + bytes.count
            } else {
                pendingRunIsOpen = false
            }
        }
        pending.append(bytes)
        pendingByteCount += bytes.count
        pendingSampleCount += packet.sampleCount
        if pendingByteCount >= Self.batchBytes || pending.count >= 512 || pendingSampleCount >= sampleRate { try flush() }
    }

    /// Writes the header region and closes the file. Returns the part path, ready to be renamed.
    /// `oggComments`: Ogg only, fields known only now (ReplayGain), put into the first link's
    /// comment header.
    func complete(tag: ID3TagContent?, id3v1: Bool, oggComments: [VorbisComments.Field] = []) throws(AirtapError) {
        try flush()
        try cutHeldBack()
        if codec.tagFormat == .vorbisComments, !oggComments.isEmpty {
            try rewriteOggComments(adding: oggComments)
        }
        if let xing {
            let frame = xing.render(frameCount: frameCount, byteCount: audioByteCount, isConstantBitrate: isConstantBitrate)
            try write(frame, at: tagReserve)
        }
        if let tag, tagReserve > 0 {
            let rendered = ID3Writer.render(tag, paddedLength: tagReserve)
            if rendered.count == tagReserve {
                try write(rendered, at: 0)
            } else {
                try replaceReservedRegion(with: rendered)
            }
        }
        if let tag, id3v1, codec == .mp3 {
            try write(contentsOf: ID3Writer.renderV1(tag))
        }
        // On disk before it gets its final name: a power cut never leaves a complete-looking
        // track whose blocks were not written.
        guard fsync(descriptor) == 0 else {
            throw .localIO("cannot write \(partPath): \(errorText(errno))")
        }
        try closeFile()
    }

    /// Puts `tag` in the reserved room now (when it fits), so that a kill leaves a tagged `.part`;
    /// `complete` writes the final one.
    func writeProvisionalTag(_ tag: ID3TagContent) throws(AirtapError) {
        guard tagReserve > 0 else { return }
        let rendered = ID3Writer.render(tag, paddedLength: tagReserve)
        if rendered.count == tagReserve { try write(rendered, at: 0) }
    }

    /// Writes audio that has not reached the recorder yet (the split search holds it back) past
    /// the end of what was appended, so a kill loses none of it; the next appends of the same
    /// packets move past it (`flush`) and `complete` cuts the file back to what was appended.
    /// Replaces the previous such tail.
    func writeHeldBack(_ packets: [Packet]) throws(AirtapError) {
        try flush()
        let end = lseek(descriptor, 0, SEEK_CUR)
        guard end >= 0 else { throw .localIO("cannot write \(partPath): \(errorText(errno))") }
        // Forgotten until this write is whole: a failed one leaves the disk unknown past `end`.
        let previous = heldBackSpan
        heldBackSpan = nil
        // Most of the tail is on disk already: the packets of the last one that the appends have
        // not reached yet sit right after them, and the new tail starts with the same ones.
        let kept = Self.packetsOnDisk(of: packets, previous: previous, from: heldBackStart, to: heldBackEnd, end: end,
                                      rewritesBytes: oggComments != nil)
        // One pwritev for the rest of the tail (up to a few seconds of audio), not a pwrite per
        // frame: this runs every second for every station.
        var position = end + off_t(packets[..<kept].reduce(0) { $0 + $1.bytes.count })
        // Before the writes: a write that fails midway has still reached up to here, and the
        // next cut must go back past it.
        heldBackEnd = max(heldBackEnd, end + off_t(packets.reduce(0) { $0 + $1.bytes.count }))
        tailMayLieBeyond = true
        heldBackVectors.removeAll(keepingCapacity: true)
        try withExtendedLifetime(packets) { () throws(AirtapError) in
            for packet in packets[kept...] {
                packet.bytes.withUnsafeBytes { raw in
                    heldBackVectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count))
                }
            }
            // The packets' storage is kept alive by `packets` for the duration of the calls.
            var index = 0
            while index < heldBackVectors.count {
                let count = min(heldBackVectors.count - index, Self.maxVectors)
                let expected = heldBackVectors[index..<index + count].reduce(0) { $0 + $1.iov_len }
                let written = heldBackVectors[index...].withUnsafeBufferPointer { pwritev(descriptor, $0.baseAddress, Int32(count), position) }
                guard written == expected else {
                    // A short write (a full disk midway) is an error like any other here: the tail
                    // is a kill's insurance, rewritten in a second, and the appends report for real.
                    throw .localIO("cannot write \(partPath): \(errorText(errno))")
                }
                position += off_t(written)
                index += count
            }
        }
        if position < heldBackEnd { try cutHeldBack(at: position) }
        tailMayLieBeyond = true
        heldBackEnd = position
        heldBackStart = end
        heldBackSpan = Self.contiguousSpan(of: packets)
    }

    /// The stream bytes `packets` hold, when each starts where the one before ends.
    static func contiguousSpan(of packets: [Packet]) -> Range<Int>? {
        guard let first = packets.first else { return nil }
        var next = first.position
        for packet in packets {
            guard packet.position == next else { return nil }
            next += packet.bytes.count
        }
        return first.position..<next
    }

    /// How many of `packets`, from the first, are on disk from `end` on. The tail written last
    /// (from `start` to `stop` in the file) held the stream bytes `previous`; when the appends
    /// since were its first packets, the stream byte at `end` is as far into it as `end` is past
    /// `start`, and the new packets that go on from there within it are on disk. Appends of
    /// anything else (a padding copy, an Ogg comment rewrite) put that byte elsewhere, and no
    /// packet starts there: none is kept. Positions only grow within a connection, and the
    /// appends reach every packet held before the next connection's first.
    static func packetsOnDisk(of packets: [Packet], previous: Range<Int>?, from start: off_t, to stop: off_t, end: off_t,
                              rewritesBytes: Bool) -> Int {
        guard !rewritesBytes, let previous, start <= end, end < stop,
              Int(stop - start) == previous.count else { return 0 }
        var next = previous.lowerBound + Int(end - start)
        var kept = 0
        while kept < packets.count, packets[kept].position == next, next + packets[kept].bytes.count <= previous.upperBound {
            next += packets[kept].bytes.count
            kept += 1
        }
        return kept
    }

    /// Drops what `writeHeldBack` left beyond `end` (the file position: what was appended).
    private func cutHeldBack(at end: off_t? = nil) throws(AirtapError) {
        heldBackSpan = nil
        guard end != nil || tailMayLieBeyond else { return }
        let end = end ?? lseek(descriptor, 0, SEEK_CUR)
        heldBackEnd = end
        guard end >= 0, ftruncate(descriptor, end) == 0 else {
            throw .localIO("cannot write \(partPath): \(errorText(errno))")
        }
        tailMayLieBeyond = false
    }

    /// Puts the appends kept for the next batched write on disk now (the end of a network batch).
    func writeAppends() throws(AirtapError) {
        try flush()
    }

    /// What a part file's name ends in while its track is not to be kept (`--keep-only`, `--skip`):
    /// the next start deletes such a leftover of a killed run instead of finishing it (`LeftoverParts`).
    static let discardedSuffix = ".discard"
    /// The track is not to be kept, by the title it had last (`markDiscarded`).
    private(set) var isDiscarded = false

    /// Renames the part file to say whether its track is to be kept. Best effort, and never over
    /// another file: the decision at the close is what counts; the name only tells a later
    /// start what to do with the leftover of a kill.
    func markDiscarded(_ discarded: Bool) {
        isDiscarded = discarded
        let name = discarded ? keptPartName + Self.discardedSuffix : keptPartName
        guard name != partName else { return }
        if linkat(folder.descriptor, partName, folder.descriptor, name, 0) == 0 {
            unlinkat(folder.descriptor, partName, 0)
            partName = name
        } else if errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS || errno == EMLINK,
                  faccessat(folder.descriptor, name, F_OK, AT_SYMLINK_NOFOLLOW) != 0,
                  renameat(folder.descriptor, partName, folder.descriptor, name) == 0 {
            // No hard links on this file system (see `moveWithoutOverwriting`).
            partName = name
        }
        folder.release()
    }

    /// Closes and deletes the part file: a track not kept leaves nothing behind.
    func discard() {
        pending.removeAll()
        pendingByteCount = 0
        pendingSampleCount = 0
        try? closeFile()
        unlinkat(folder.descriptor, partName, 0)
    }

    /// Closes without tags or counts (a failure path): what was received stays on disk.
    func abandon() {
        try? flush()
        try? cutHeldBack()
        try? closeFile()
    }

    // MARK: I/O

    private func flush() throws(AirtapError) {
        guard !pending.isEmpty else { return }
        defer {
            pending.removeAll(keepingCapacity: true)
            pendingByteCount = 0
            pendingSampleCount = 0
            pendingRun = nil
            pendingRunIsOpen = false
        }
        // With the split search on, most packets were written once already, as part of a
        // held-back tail, before they are appended: those bytes are not written twice.
        let onDisk = try pendingBytesOnDisk()
        if onDisk > 0, lseek(descriptor, off_t(onDisk), SEEK_CUR) < 0 {
            throw .localIO("cannot write \(partPath): \(errorText(errno))")
        }
        guard onDisk < pendingByteCount else { return }
        appendVectors.removeAll(keepingCapacity: true)
        try withExtendedLifetime(pending) { () throws(AirtapError) in
            for slice in pending {
                slice.withUnsafeBytes { raw in
                    appendVectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count))
                }
            }
            // The slices' storage is kept alive by `pending` for the duration of the calls.
            var index = Self.advance(&appendVectors, from: 0, by: onDisk)
            while index < appendVectors.count {
                let written = appendVectors[index...].withUnsafeBufferPointer { buffer in
                    writev(descriptor, buffer.baseAddress, Int32(min(buffer.count, Self.maxVectors)))
                }
                guard written >= 0 else {
                    if errno == EINTR { continue }
                    throw .localIO("cannot write \(partPath): \(errorText(errno))")
                }
                index = Self.advance(&appendVectors, from: index, by: written)
            }
        }
    }

    /// How many of the pending bytes, from the first, the last held-back tail wrote where they go:
    /// the tail (from `heldBackStart` to `heldBackEnd` in the file) held the stream bytes
    /// `heldBackSpan`, so the stream byte at the file's position is as far into it as that
    /// position is past its start; when the pending run starts with that byte, its bytes up to
    /// the tail's end are there: only the appends have written since the tail, and only before
    /// the file's position, and a stream position names one byte (positions go on across a
    /// station's reconnects).
    private func pendingBytesOnDisk() throws(AirtapError) -> Int {
        guard let run = pendingRun, let tail = heldBackSpan, Int(heldBackEnd - heldBackStart) == tail.count else { return 0 }
        let position = lseek(descriptor, 0, SEEK_CUR)
        guard position >= 0 else { throw .localIO("cannot write \(partPath): \(errorText(errno))") }
        guard position >= heldBackStart, position < heldBackEnd,
              run.lowerBound == tail.lowerBound + Int(position - heldBackStart) else { return 0 }
        return min(run.upperBound, tail.upperBound) - run.lowerBound
    }

    /// The index of the first vector not wholly consumed once `count` more bytes from `index` on
    /// are done, that vector trimmed by what of it they took.
    private static func advance(_ vectors: inout [iovec], from index: Int, by count: Int) -> Int {
        var index = index, remaining = count
        while remaining > 0, index < vectors.count {
            if remaining >= vectors[index].iov_len {
                remaining -= vectors[index].iov_len
                index += 1
            } else {
                vectors[index].iov_base += remaining
                vectors[index].iov_len -= remaining
                remaining = 0
            }
        }
        return index
    }

    private func write(contentsOf bytes: [UInt8]) throws(AirtapError) {
        try Self.write(bytes[...], to: descriptor, path: partPath)
    }

    /// All of `bytes` (write(2) may take less at once; swift-system loops, retrying EINTR).
    static func write(_ bytes: ArraySlice<UInt8>, to descriptor: Int32, path: String) throws(AirtapError) {
        do {
            try FileDescriptor(rawValue: descriptor).writeAll(bytes)
        } catch {
            throw .localIO("cannot write \(path): \(Self.describe(error))")
        }
    }

    private func write(_ bytes: [UInt8], at position: Int) throws(AirtapError) {
        do {
            try FileDescriptor(rawValue: descriptor).writeAll(toAbsoluteOffset: Int64(position), bytes)
        } catch {
            throw .localIO("cannot write \(partPath): \(Self.describe(error))")
        }
    }

    /// An `Errno` as strerror(3) says it ("No space left on device").
    private static func describe(_ error: any Error) -> String {
        (error as? Errno)?.description ?? "\(error)"
    }

    /// The tag outgrew its reserved room: write tag + the rest of the file into a new file once.
    private func replaceReservedRegion(with tag: [UInt8]) throws(AirtapError) {
        try closeFile()
        let rewrite = try openRewrite()
        defer {
            close(rewrite.source)
            close(rewrite.target)
        }
        try Self.write(tag[...], to: rewrite.target, path: rewrite.scratchPath)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var position = off_t(tagReserve)
        while case let count = try readPart(rewrite.source, into: &buffer, at: position), count > 0 {
            try Self.write(buffer[..<count], to: rewrite.target, path: rewrite.scratchPath)
            position += off_t(count)
        }
        try replacePart(with: rewrite)
    }

    /// Opens the part file again for appending, after a step that replaced it.
    func reopenPart() throws(AirtapError) {
        descriptor = DescriptorHeadroom.admit(openat(folder.descriptor, partName, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC))
        guard descriptor >= 0 else { throw .localIO("cannot reopen \(partPath)") }
    }

    func closeFile() throws(AirtapError) {
        guard descriptor >= 0 else { return }
        let status = close(descriptor)
        descriptor = -1
        guard status == 0 else { throw .localIO("cannot close \(partPath): \(errorText(errno))") }
    }
}
