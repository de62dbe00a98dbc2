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
        let rewrite = try openRewrite()
        defer { close(rewrite.source) }
        var targetOpen = true
        defer { if targetOpen { close(rewrite.target) } }
        var rewriter = OggCommentRewriter(fields: fields)
        // Unparsed bytes: at most one page (65 307 bytes) beyond a read.
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var output: [UInt8] = []
        var position: off_t = 0
        var rewroteHeaders = false
        while case let count = try readPart(rewrite.source, into: &buffer, at: position), count > 0 {
            position += off_t(count)
            pending += buffer[..<count]
            guard Self.rewritePages(&pending, into: &output, with: &rewriter, rewroteHeaders: &rewroteHeaders) else {
                // Bytes that are not pages: the file stays as it is.
                unlinkat(folder.descriptor, rewrite.scratchName, 0)
                return
            }
            if output.count >= 1 << 20 {
                try Self.write(output[...], to: rewrite.target, path: rewrite.scratchPath)
                output.removeAll(keepingCapacity: true)
            }
        }
        guard pending.isEmpty, rewroteHeaders else {
            unlinkat(folder.descriptor, rewrite.scratchName, 0)
            return
        }
        try Self.write(output[...], to: rewrite.target, path: rewrite.scratchPath)
        targetOpen = false
        guard close(rewrite.target) == 0 else { throw .localIO("cannot write \(rewrite.scratchPath): \(errorText(errno))") }
        try closeFile()
        try replacePart(with: rewrite)
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
