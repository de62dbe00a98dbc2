#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import Descriptors
import FoundationEssentials
import ICYWire
import Logging

/// Finishes what a killed run of a station left in its folder (SIGKILL, a crash, a power cut):
/// each `NAME.EXT.part` is cut to its last whole frame, gets its Xing/Info frame with the exact
/// counts, keeps the provisional tag the run wrote into it, and moves to `incomplete/NAME.EXT`.
/// A `NAME.EXT.part.tag` scratch file (a tag rewrite the kill interrupted; its `.part` is still
/// whole) is deleted, and so is a `NAME.EXT.part.discard` (a track `--keep-only` or `--skip` did
/// not keep: the run would have deleted it at its end).
///
/// Run only with the station's lock held. Stations that share a name share a folder, so the
/// leftovers are left alone while any other station's lock in that folder is held: then a
/// `.part` may be a live recording's.
///
/// Someone who can write the output folder can plant anything at a `.part` name. Only a regular
/// file with one link is ever cut or written (a hard link to a file outside `--out` would carry
/// the change there), and the scan is bounded by the audio itself: it stops at the first hole
/// and a mebibyte past the last frame, so a sparse file of gigabytes costs nothing. A leftover
/// that cannot be finished (a link, a hard link, a folder, no audio) is renamed
/// `NAME.EXT.part.unfinished`, untouched, with one warning, so no later start tries it again.
enum LeftoverParts {
    /// Leftovers made of MPEG audio or ADTS frames, which `AudioFramer` finds.
    static let framedExtensions = [".mp3", ".mp2", ".mp1", ".aac"]
    /// Read in pieces: a dead track may be hours long.
    private static let chunkBytes = 1 << 20
    /// Frames of a part file follow each other: this many bytes without one end its audio (the
    /// reserved tag room before the first frame is a few KiB).
    static let maxBytesWithoutAudio = 1 << 20
    /// What a leftover that cannot be finished is renamed to (its name plus this).
    static let setAsideSuffix = ".unfinished"
    /// lseek's SEEK_DATA (Linux 3.1+; glibc declares it only under _GNU_SOURCE, which Swift's
    /// Glibc module is built without). A file system without it treats the whole file as data.
    private static let seekData: Int32 = 3

    /// What became of one leftover.
    enum Outcome: Equatable {
        /// Finished into this path (in `incomplete/`).
        case finished(String)
        /// Renamed aside, untouched, to this path, for this reason.
        case setAside(String, reason: String)
    }

    /// Finishes every leftover in `root/stationFolder`; returns the paths made. Errors are logged
    /// and skip that file: a leftover never keeps a new recording from starting.
    @discardableResult
    package static func finish(stationFolder: String, below root: String, holding lock: RecordingLock,
                              logger: Logger) -> [String] {
        guard let folder = try? OutputFolder.open([stationFolder], below: root),
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        let ownLock = URL(fileURLWithPath: lock.path).lastPathComponent
        let otherLocks = names.filter { $0.hasPrefix(".airtap-") && $0.hasSuffix(".lock") && $0 != ownLock }
        if let busy = otherLocks.first(where: { RecordingLock.isHeld(folder: stationFolder, lockName: $0, below: root) }) {
            logger.info("leftover .part files in \(folder.path) not finished: \(busy) is held by another recording")
            return []
        }
        var finished: [String] = []
        for name in names.sorted() where name.hasSuffix(".part.tag") {
            unlinkat(folder.descriptor, name, 0)
        }
        for name in names.sorted() where name.hasSuffix(".part" + TrackFile.discardedSuffix) {
            if unlinkat(folder.descriptor, name, 0) == 0 {
                logger.info("deleted a killed run's track that was not to be kept", metadata: ["file": "\(folder.path)/\(name)"])
            }
        }
        // Only the formats the framer reads: another codec's leftover (Ogg) is left as it is.
        for name in names.sorted() where framedExtensions.contains(where: { name.hasSuffix($0 + ".part") }) && !name.hasPrefix(".") {
            do {
                switch try finish(name, in: folder) {
                case .finished(let path):
                    logger.notice("finished a killed run's track", metadata: ["file": "\(path)"])
                    finished.append(path)
                case .setAside(let path, let reason):
                    logger.warning("cannot finish \(folder.path)/\(name) left by a killed run (\(reason)): left as it is, renamed \(path)")
                }
            } catch {
                logger.warning("cannot finish \(folder.path)/\(name) left by a killed run: \(error)")
            }
        }
        return finished
    }

    /// What the frames of a dead part file add up to.
    struct Survey: Equatable {
        /// File offset of the first whole frame.
        var audioStart: Int?
        /// File offset just past the last whole frame.
        var audioEnd = 0
        var frameCount = 0
        var byteCount = 0
        var isConstantBitrate = true
        var firstHeader: [UInt8] = []
        var bitrate: Int?
        /// How far the scan read.
        var scannedBytes = 0
    }

    static func finish(_ name: String, in folder: OutputFolder) throws(AirtapError) -> Outcome {
        let path = folder.path + "/" + name
        // O_NONBLOCK: a FIFO planted at the name must not hang the start (it is set aside below).
        let descriptor = DescriptorHeadroom.admit(openat(folder.descriptor, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC))
        guard descriptor >= 0 else {
            switch errno {
            case ELOOP: return try setAside(name, in: folder, because: "a symbolic link")
            case EISDIR: return try setAside(name, in: folder, because: "a folder")
            default: throw .localIO("cannot open \(path): \(errorText(errno))")
            }
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .localIO("cannot read \(path): \(errorText(errno))") }
        guard status.st_mode & S_IFMT == S_IFREG else { return try setAside(name, in: folder, because: "not a regular file") }
        guard status.st_nlink == 1 else {
            return try setAside(name, in: folder, because: "it has \(status.st_nlink) hard links, and cutting it would change the others")
        }
        let survey = try survey(descriptor, path: path)
        guard let audioStart = survey.audioStart else {
            return try setAside(name, in: folder, because: "no audio frame in it")
        }
        guard ftruncate(descriptor, off_t(survey.audioEnd)) == 0 else {
            throw .localIO("cannot cut \(path): \(errorText(errno))")
        }
        // The Info frame goes into the room reserved for it, right before the first frame.
        if let xing = XingFrame(matching: survey.firstHeader), audioStart >= xing.length {
            let frame = xing.render(frameCount: survey.frameCount, byteCount: survey.byteCount,
                                    isConstantBitrate: survey.isConstantBitrate)
            let written = frame.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(audioStart - xing.length)) }
            guard written == frame.count else { throw .localIO("cannot write \(path): \(errorText(errno))") }
        }
        guard fsync(descriptor) == 0 else { throw .localIO("cannot write \(path): \(errorText(errno))") }
        let incomplete = try folder.child("incomplete")
        return .finished(try moveWithoutOverwriting(name, in: folder, to: String(name.dropLast(".part".count)), in: incomplete))
    }

    /// Renames the leftover `name` to `name.unfinished` (` (2)`… when taken), never touching
    /// what it is or points to.
    private static func setAside(_ name: String, in folder: OutputFolder, because reason: String) throws(AirtapError) -> Outcome {
        .setAside(try moveWithoutOverwriting(name, in: folder, to: name + setAsideSuffix, in: folder), reason: reason)
    }

    /// Runs the file through the framer, a piece at a time, counting whole frames.
    static func survey(_ descriptor: Int32, path: String) throws(AirtapError) -> Survey {
        var framer = AudioFramer()
        var survey = Survey()
        var buffer = [UInt8](repeating: 0, count: chunkBytes)
        var offset: off_t = 0
        func take(_ event: FramerEvent) {
            guard case .packet(let packet) = event else { return }
            if survey.audioStart == nil {
                survey.audioStart = packet.position
                survey.firstHeader = Array(packet.bytes.prefix(4))
            }
            survey.frameCount += 1
            survey.byteCount += packet.bytes.count
            survey.audioEnd = packet.position + packet.bytes.count
            let bitrate = packet.header.bitrate
            if survey.bitrate == nil { survey.bitrate = bitrate } else if bitrate != survey.bitrate { survey.isConstantBitrate = false }
        }
        while true {
            // Bounded by the audio: a part file is written front to back, so a hole (or a long
            // stretch without a frame) is past its end.
            let data = lseek(descriptor, offset, seekData)
            if data < 0, errno == ENXIO { break }
            if data > offset { break }
            if offset - off_t(survey.audioEnd) > off_t(maxBytesWithoutAudio) { break }
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count == 0 { break }
            guard count > 0 else {
                if errno == EINTR { continue }
                throw .localIO("cannot read \(path): \(errorText(errno))")
            }
            buffer.withUnsafeBytes { framer.push(UnsafeRawBufferPointer(rebasing: $0[..<count]), take) }
            offset += off_t(count)
            survey.scannedBytes = Int(offset)
        }
        framer.finish(take)
        return survey
    }
}
