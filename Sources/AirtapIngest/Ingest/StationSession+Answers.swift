import AirtapSupport
import CurlSource
import ICYWire

/// How a session reads a server's answer: what its head says the body is, and what an
/// answer without audio is called in the error.
extension StationSession {
    /// What a response's head says the body is.
    enum HeadClass {
        /// Not a body airtap reads: the candidate failed with this.
        case failed(AirtapError)
        case playlist(PlaylistFormat?)
        case audio(ResponseHead, Container)
    }

    /// Sorts a response by its head: an error status, a playlist (by content type, or by the
    /// URL when a plain web server's type says nothing), or audio in a container.
    static func classify(_ raw: TransferHead, url: String) -> HeadClass {
        let head: ResponseHead
        do {
            head = try ResponseHead.parse(statusLine: raw.statusLine, headerLines: raw.headerLines)
        } catch {
            return .failed(.stream(url: url, reason: "malformed response: \(raw.statusLine)"))
        }
        guard (200..<300).contains(head.statusCode) else {
            return .failed(.httpStatus(url: url, status: head.statusCode, reason: head.reason, contentType: head.contentType))
        }
        switch head.payload {
        case .playlist(let format):
            return .playlist(format)
        case .audio(nil) where Playlist.format(forURL: url) != nil:
            // No content type, or application/octet-stream, at a .pls/.m3u URL: a playlist
            // served by a plain web server, not a stream of frames.
            return .playlist(Playlist.format(forURL: url))
        case .unsupported(let format):
            return .failed(.unsupportedFormat(url: url, format: format.description))
        case .other(let contentType):
            // A playlist from a plain web server often comes as text/plain: trust the URL then.
            if let format = Playlist.format(forURL: url) { return .playlist(format) }
            return .failed(.notAudio(url: url, status: head.statusCode, contentType: contentType))
        case .audio, .ogg:
            return .audio(head, head.payload.container ?? .undecided)
        }
    }

    static func describeEmptyStream(_ end: TransferEnd, head: ResponseHead) -> String {
        if case .failed(let error) = end { return "\(answered(head)) connection lost before any audio: \(error.message)" }
        return "the server \(answered(head)) sent no audio frames"
    }

    /// "answered 200 audio/mpeg but": how the error for a connection without audio begins.
    static func answered(_ head: ResponseHead) -> String {
        "answered \(head.statusCode) \(head.contentType ?? "without a content type") but"
    }
}
