import CurlSource
#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import ICYWire
import Logging

/// Finishes what a killed run of a station left in its folder (SIGKILL, a crash, a power cut):
/// each `NAME.EXT.part` is cut to its last whole frame, gets its Xing/Info frame with the exact
/// counts, keeps the provisional tag the run wrote into it, and moves to `incomplete/NAME.EXT`.
/// A `NAME.EXT.part.tag` scratch file (a tag rewrite the kill interrupted; its `.part` is still
/// whole) is deleted.
///
/// Run only with the station's lock held. Stations that share a name share a folder, so the
/// leftovers are left alone while any other station's lock in that folder is held: then a
/// `.part` may be a live recording's.
package enum LeftoverParts {
    /// Leftovers made of MPEG audio or ADTS frames, which `AudioFramer` finds.
    static let framedExtensions = [".mp3", ".mp2", ".mp1", ".aac"]
    /// Read in pieces: a dead track may be hours long.
    private static let chunkBytes = 1 << 20

    /// Finishes every leftover in `root/stationFolder`; returns the paths made. Errors are logged
    /// and skip that file: a leftover never keeps a new recording from starting.
    @discardableResult
    package static func finish(stationFolder: String, below root: String, holding lock: RecordingLock,
                              logger: Logger) -> [String] {
        guard let folder = try? OutputFolder.open([stationFolder], below: root),
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        let ownLock = URL(fileURLWithPath: lock.path).lastPathComponent
        let otherLocks = names.filter { $0.hasPrefix(".airtap-") && $0.hasSuffix(".lock") && $0 != ownLock }
        if let busy = otherLocks.first(where: { isHeld($0, in: folder) }) {
            logger.info("leftover .part files in \(folder.path) not finished: \(busy) is held by another recording")
            return []
        }
        var finished: [String] = []
        for name in names.sorted() where name.hasSuffix(".part.tag") {
            unlinkat(folder.descriptor, name, 0)
        }
        // Only the formats the framer reads: another codec's leftover (Ogg) is left as it is.
        for name in names.sorted() where framedExtensions.contains(where: { name.hasSuffix($0 + ".part") }) && !name.hasPrefix(".") {
            do {
                let path = try finish(name, in: folder)
                logger.notice("finished a killed run's track", metadata: ["file": "\(path)"])
                finished.append(path)
            } catch {
                logger.warning("cannot finish \(folder.path)/\(name) left by a killed run: \(error)")
            }
        }
        return finished
    }

    /// Whether another recording holds the lock file `name` (a shared lock attempt fails). The
    /// probe holds a shared lock for a moment: a recording of that station starting in that very
    /// moment would be told it is already running (without `--wait`); rare, and it says so.
    private static func isHeld(_ name: String, in folder: OutputFolder) -> Bool {
        let descriptor = DescriptorHeadroom.admit(openat(folder.descriptor, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC))
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return flock(descriptor, LOCK_SH | LOCK_NB) != 0
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
    }

    static func finish(_ name: String, in folder: OutputFolder) throws(AirtapError) -> String {
        let path = folder.path + "/" + name
        let descriptor = DescriptorHeadroom.admit(openat(folder.descriptor, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC))
        guard descriptor >= 0 else { throw .localIO("cannot open \(path): \(errorText(errno))") }
        defer { close(descriptor) }
        let survey = try survey(descriptor, path: path)
        guard let audioStart = survey.audioStart else {
            throw .localIO("\(path) holds no audio frame")
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
        return try moveWithoutOverwriting(name, in: folder, to: String(name.dropLast(".part".count)), in: incomplete)
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
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, offset) }
            if count == 0 { break }
            guard count > 0 else {
                if errno == EINTR { continue }
                throw .localIO("cannot read \(path): \(errorText(errno))")
            }
            buffer.withUnsafeBytes { framer.push(UnsafeRawBufferPointer(rebasing: $0[..<count]), take) }
            offset += off_t(count)
        }
        framer.finish(take)
        return survey
    }
}
