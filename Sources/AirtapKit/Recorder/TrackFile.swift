#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import ICYWire
import ID3Tagging

/// One recorded track on disk while it grows: `NAME.mp3.part`, with room reserved at the start
/// for the ID3v2 tag and the Xing frame, which are written in place once the track is complete.
///
/// Packets are written with `writev` straight from their buffers, a batch at a time: no copy
/// in user space, a system call per ~64 KiB. Used from one queue (the recorder's).
final class TrackFile {
    let partPath: String
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
    private var firstBitrate: Int?
    private var isConstantBitrate = true
    private var pending: [ArraySlice<UInt8>] = []
    private var pendingByteCount = 0

    private static let batchBytes = 64 * 1024
    /// IOV_MAX on Linux; Glibc's macro does not reach Swift.
    private static let maxVectors = 1024
    /// Room for the tag when it is rendered at the end: enough for long titles; larger tags
    /// fall back to rewriting the file once.
    static let defaultTagReserve = 4096

    var seconds: Double { sampleRate > 0 ? Double(sampleCount) / Double(sampleRate) : 0 }

    /// Creates the part file; `first` decides the codec and the Xing frame's format.
    /// Ogg: adds the recorder's tags to the link's comment header as the pages go by.
    private var oggComments: OggCommentRewriter?

    /// `oggTags`: Vorbis comment fields to write into an Ogg link's comment header.
    init(partPath: String, first: Packet, reservesTagSpace: Bool,
         oggTags: [VorbisComments.Field] = []) throws(AirtapError) {
        oggComments = oggTags.isEmpty || !first.header.codec.isOgg ? nil : OggCommentRewriter(fields: oggTags)
        self.partPath = partPath
        self.codec = first.header.codec
        self.sampleRate = first.header.sampleRate
        descriptor = open(partPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .localIO("cannot create \(partPath): \(String(cString: strerror(errno)))") }
        // AAC (ADTS) files carry neither tags nor a Xing frame: players read them as raw streams.
        let isMP3 = codec == .mp3
        tagReserve = reservesTagSpace && isMP3 ? Self.defaultTagReserve : 0
        xing = isMP3 ? XingFrame(matching: first.bytes.prefix(4)) : nil
        let reserved = tagReserve + (xing?.length ?? 0)
        if reserved > 0 {
            try write(contentsOf: [UInt8](repeating: 0, count: reserved))
        }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    func append(_ packet: Packet) throws(AirtapError) {
        if case .ogg(let page) = packet.header { endsAtLinkEnd = page.isLinkEnd }
        if oggComments != nil {
            switch oggComments?.rewrite(packet.bytes) {
            case .held:
                return
            case .replaced(let bytes):
                try appendBytes(bytes[...], packet: packet)
                return
            case .unchanged, nil:
                break
            }
        }
        try appendBytes(packet.bytes, packet: packet)
    }

    private func appendBytes(_ bytes: ArraySlice<UInt8>, packet: Packet) throws(AirtapError) {
        frameCount += 1
        sampleCount += packet.sampleCount
        audioByteCount += bytes.count
        let bitrate = packet.header.bitrate
        if firstBitrate == nil { firstBitrate = bitrate } else if bitrate != firstBitrate { isConstantBitrate = false }
        pending.append(bytes)
        pendingByteCount += bytes.count
        if pendingByteCount >= Self.batchBytes || pending.count >= 512 { try flush() }
    }

    /// Writes the header region and closes the file. Returns the part path, ready to be renamed.
    func complete(tag: ID3TagContent?, id3v1: Bool) throws(AirtapError) {
        try flush()
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
        try closeFile()
    }

    /// Closes without tags or counts (a failure path): what was received stays on disk.
    func abandon() {
        try? flush()
        try? closeFile()
    }

    // MARK: I/O

    private func flush() throws(AirtapError) {
        guard !pending.isEmpty else { return }
        defer {
            pending.removeAll(keepingCapacity: true)
            pendingByteCount = 0
        }
        var vectors: [iovec] = []
        vectors.reserveCapacity(pending.count)
        try withExtendedLifetime(pending) { () throws(AirtapError) in
            for slice in pending {
                slice.withUnsafeBytes { raw in
                    vectors.append(iovec(iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress), iov_len: raw.count))
                }
            }
            // The slices' storage is kept alive by `pending` for the duration of the call.
            var index = 0
            while index < vectors.count {
                let written = vectors[index...].withUnsafeBufferPointer { buffer in
                    writev(descriptor, buffer.baseAddress, Int32(min(buffer.count, Self.maxVectors)))
                }
                guard written >= 0 else {
                    if errno == EINTR { continue }
                    throw .localIO("cannot write \(partPath): \(String(cString: strerror(errno)))")
                }
                var remaining = written
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
            }
        }
    }

    private func write(contentsOf bytes: [UInt8]) throws(AirtapError) {
        try Self.write(bytes[...], to: descriptor, path: partPath)
    }

    /// write(2) until all of `bytes` is written (it may take less at once).
    private static func write(_ bytes: ArraySlice<UInt8>, to descriptor: Int32, path: String) throws(AirtapError) {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard written >= 0 else {
                if errno == EINTR { continue }
                throw .localIO("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    private func write(_ bytes: [UInt8], at position: Int) throws(AirtapError) {
        let written = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, off_t(position)) }
        guard written == bytes.count else {
            throw .localIO("cannot write \(partPath): \(String(cString: strerror(errno)))")
        }
    }

    /// The tag outgrew its reserved room: write tag + the rest of the file into a new file once.
    private func replaceReservedRegion(with tag: [UInt8]) throws(AirtapError) {
        try closeFile()
        let scratch = partPath + ".tag"
        let source = open(partPath, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else {
            throw .localIO("cannot reopen \(partPath): \(String(cString: strerror(errno)))")
        }
        defer { close(source) }
        let target = open(scratch, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard target >= 0 else {
            throw .localIO("cannot create \(scratch): \(String(cString: strerror(errno)))")
        }
        defer { close(target) }
        try Self.write(tag[...], to: target, path: scratch)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var position = off_t(tagReserve)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, $0.count, position) }
            if count == 0 { break }
            guard count > 0 else {
                if errno == EINTR { continue }
                throw .localIO("cannot rewrite \(partPath): \(String(cString: strerror(errno)))")
            }
            try Self.write(buffer[..<count], to: target, path: scratch)
            position += off_t(count)
        }
        guard rename(scratch, partPath) == 0 else {
            throw .localIO("cannot rename \(scratch): \(String(cString: strerror(errno)))")
        }
        descriptor = open(partPath, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else { throw .localIO("cannot reopen \(partPath)") }
    }

    private func closeFile() throws(AirtapError) {
        guard descriptor >= 0 else { return }
        let status = close(descriptor)
        descriptor = -1
        guard status == 0 else { throw .localIO("cannot close \(partPath): \(String(cString: strerror(errno)))") }
    }
}

/// Moves a finished file to `preferred`, or to `name (2).ext`, `name (3).ext`... if taken:
/// never overwrites, even when another process writes the same folder (link fails on EEXIST).
func moveWithoutOverwriting(_ source: String, to preferred: String) throws(AirtapError) -> String {
    let url = URL(fileURLWithPath: preferred)
    let folder = url.deletingLastPathComponent().path
    let base = url.deletingPathExtension().lastPathComponent
    let ext = url.pathExtension
    do {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    } catch {
        throw .localIO("cannot create folder \(folder): \(describeSystemError(error))")
    }
    for attempt in 1...10_000 {
        // " (n)" still within the 200-byte cap of a name made from a title.
        let name = SafeFileName.numbered(base, attempt, maxBytes: max(200, base.utf8.count))
        let candidate = folder + "/" + name + (ext.isEmpty ? "" : ".\(ext)")
        // link() fails where a file is already there, so nothing is ever overwritten, however
        // many writers share the folder.
        if link(source, candidate) == 0 {
            unlink(source)
            return candidate
        }
        switch errno {
        case EEXIST:
            continue
        case EPERM, EOPNOTSUPP, ENOSYS, EMLINK:
            // No hard links here (vfat, exFAT, some network and FUSE file systems): check, then
            // rename. The station's lock keeps other airtaps out of this folder.
            guard access(candidate, F_OK) != 0 else { continue }
            if rename(source, candidate) == 0 { return candidate }
        default:
            break
        }
        throw .localIO("cannot move \(source) to \(candidate): \(String(cString: strerror(errno)))")
    }
    throw .localIO("too many files named \(base) in \(folder)")
}
