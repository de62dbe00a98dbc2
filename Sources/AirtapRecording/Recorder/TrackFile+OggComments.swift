#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import Descriptors
import ICYWire

extension TrackFile {
    /// Ogg: the first link's comment header grows by `fields`, so every page after it moves and
    /// is renumbered: the file is copied once through `OggCommentRewriter` into a scratch file
    /// that takes its place (as `replaceReservedRegion` does for ID3). A file that does not start
    /// with a whole link's headers, or has bytes that are not pages, is left as it is.
    func rewriteOggComments(adding fields: [VorbisComments.Field]) throws(AirtapError) {
        let scratchName = partName + ".tag"
        let scratch = folder.path + "/" + scratchName
        let source = DescriptorHeadroom.admit(openat(try folder.reachable(), partName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC))
        guard source >= 0 else {
            throw .localIO("cannot reopen \(partPath): \(errorText(errno))")
        }
        defer { close(source) }
        unlinkat(folder.descriptor, scratchName, 0)
        guard let target = try folder.createFile(scratchName) else {
            throw .localIO("cannot create \(scratch): \(errorText(EEXIST))")
        }
        var targetOpen = true
        defer { if targetOpen { close(target) } }
        var rewriter = OggCommentRewriter(fields: fields)
        // Unparsed bytes: at most one page (65 307 bytes) beyond a read.
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var output: [UInt8] = []
        var position: off_t = 0
        var isWhole = true
        var rewroteHeaders = false
        reading: while true {
            let count = buffer.withUnsafeMutableBytes { pread(source, $0.baseAddress, $0.count, position) }
            if count == 0 { break }
            guard count > 0 else {
                if errno == EINTR { continue }
                throw .localIO("cannot rewrite \(partPath): \(errorText(errno))")
            }
            position += off_t(count)
            pending += buffer[..<count]
            guard Self.rewritePages(&pending, into: &output, with: &rewriter, rewroteHeaders: &rewroteHeaders) else {
                isWhole = false
                break reading
            }
            if output.count >= 1 << 20 {
                try Self.write(output[...], to: target, path: scratch)
                output.removeAll(keepingCapacity: true)
            }
        }
        guard isWhole, pending.isEmpty, rewroteHeaders else {
            unlinkat(folder.descriptor, scratchName, 0)
            return
        }
        try Self.write(output[...], to: target, path: scratch)
        targetOpen = false
        guard close(target) == 0 else { throw .localIO("cannot write \(scratch): \(errorText(errno))") }
        try closeFile()
        guard renameat(folder.descriptor, scratchName, folder.descriptor, partName) == 0 else {
            throw .localIO("cannot rename \(scratch): \(errorText(errno))")
        }
        try reopenPart()
    }

    /// Passes the whole pages at the head of `pending` through `rewriter` into `output`, keeping
    /// an unfinished page's bytes in `pending`; false at bytes that are not a page.
    private static func rewritePages(_ pending: inout [UInt8], into output: inout [UInt8],
                                     with rewriter: inout OggCommentRewriter, rewroteHeaders: inout Bool) -> Bool {
        var offset = 0
        while offset < pending.count {
            switch OggPage.parse(pending[offset...]) {
            case .page(let page):
                switch rewriter.rewrite(page.bytes) {
                case .unchanged: output += page.bytes
                case .held: break
                case .replaced(let bytes):
                    output += bytes
                    rewroteHeaders = true
                }
                offset += page.bytes.count
            case .needMore:
                pending.removeFirst(offset)
                offset = pending.count + 1
            case .invalid:
                return false
            }
        }
        if offset == pending.count { pending.removeAll(keepingCapacity: true) }
        return true
    }
}
