#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import Descriptors

/// A step that changes what comes before the audio (a tag outgrowing its room, Ogg comments)
/// copies the part file once into a scratch file beside it, which then takes the part file's
/// name. Everything goes through the track's folder descriptor, never through a path.
extension TrackFile {
    /// Both ends of a copy of the part file that takes its place: the part opened to read, and a
    /// fresh scratch file beside it.
    struct PartRewrite {
        let source: Int32
        let target: Int32
        let scratchName: String
        let scratchPath: String
    }

    /// Opens the part file to read and creates the scratch file its rewrite goes into.
    func openRewrite() throws(AirtapError) -> PartRewrite {
        let scratchName = partName + ".tag"
        let scratchPath = folder.path + "/" + scratchName
        let source = DescriptorHeadroom.admit(openat(try folder.reachable(), partName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC))
        guard source >= 0 else {
            throw .localIO("cannot reopen \(partPath): \(errorText(errno))")
        }
        // A leftover of a killed run, or a link someone planted: removed (a link's target is
        // untouched), then the scratch file is created afresh.
        unlinkat(folder.descriptor, scratchName, 0)
        let target: Int32?
        do {
            target = try folder.createFile(scratchName)
        } catch {
            close(source)
            throw error
        }
        guard let target else {
            close(source)
            throw .localIO("cannot create \(scratchPath): \(errorText(EEXIST))")
        }
        return PartRewrite(source: source, target: target, scratchName: scratchName, scratchPath: scratchPath)
    }

    /// Reads the part file from `position` into `buffer`, retrying an interrupted read: the bytes
    /// read, 0 at its end.
    func readPart(_ source: Int32, into buffer: inout [UInt8], at position: off_t) throws(AirtapError) -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, $0.count, position) }
            if count >= 0 { return count }
            guard errno == EINTR else { throw .localIO("cannot rewrite \(partPath): \(errorText(errno))") }
        }
    }

    /// The rewrite's scratch file takes the part file's name, and is the part file from now on.
    func replacePart(with rewrite: PartRewrite) throws(AirtapError) {
        guard renameat(folder.descriptor, rewrite.scratchName, folder.descriptor, partName) == 0 else {
            throw .localIO("cannot rename \(rewrite.scratchPath): \(errorText(errno))")
        }
        try reopenPart()
    }
}
