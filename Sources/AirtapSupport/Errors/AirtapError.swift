/// Everything that can end an airtap command, each with a one-line message and its exit code.
///
/// Exit codes (README): 0 ok, 1 usage or configuration, 2 network or stream, 3 local I/O,
/// 4 already running (a recording of the same station holds the lock).
package enum AirtapError: Error, Sendable, Hashable, CustomStringConvertible {
    case usage(String)
    case configuration(String)
    case unknownStation(String, known: [String])
    /// libcurl could not reach the server or lost it.
    case network(url: String, reason: String)
    /// The server answered, but not with audio: an error status or a page.
    case httpStatus(url: String, status: Int, reason: String, contentType: String?)
    case notAudio(url: String, status: Int, contentType: String)
    case playlist(url: String, reason: String)
    /// Audio in a format airtap cannot read (Matroska, FLAC in Ogg, HLS): permanent, never retried.
    case unsupportedFormat(url: String, format: String)
    /// The body was not a usable stream (no frames, nothing at all).
    case stream(url: String, reason: String)
    case localIO(String)
    /// Another airtap already records this station (the lock is held).
    case alreadyRunning(String)

    package var exitCode: Int32 {
        switch self {
        case .usage, .configuration, .unknownStation: 1
        case .network, .httpStatus, .notAudio, .playlist, .unsupportedFormat, .stream: 2
        case .localIO: 3
        case .alreadyRunning: 4
        }
    }

    package var description: String {
        switch self {
        case .usage(let message), .configuration(let message), .localIO(let message), .alreadyRunning(let message):
            return message
        case .unknownStation(let id, let known):
            let list = known.isEmpty ? "none are defined" : "known: \(known.joined(separator: ", "))"
            return "unknown station '\(id)' (\(list))"
        case .network(let url, let reason):
            return "\(url): \(reason)"
        case .httpStatus(let url, let status, let reason, let contentType):
            let type = contentType.map { ", \($0)" } ?? ""
            return "\(url): server answered \(status) \(reason)\(type)".trimmingTrailingSpaces()
        case .notAudio(let url, let status, let contentType):
            return "\(url): server answered \(status) with \(contentType), not an audio stream"
        case .playlist(let url, let reason):
            return "\(url): playlist: \(reason)"
        case .stream(let url, let reason):
            return "\(url): \(reason)"
        case .unsupportedFormat(let url, let format):
            return "\(url): unsupported stream format: \(format)"
        }
    }
}

/// Why a connection, or a whole command, stopped.
package enum StopReason: Sendable, Hashable, CustomStringConvertible {
    case endOfStream
    case userRequest
    case limitReached
    case error(AirtapError)

    package var description: String {
        switch self {
        case .endOfStream: "end of stream"
        case .userRequest: "stopped by user"
        case .limitReached: "limit reached"
        case .error(let error): error.description
        }
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var result = self
        while result.last == " " { result.removeLast() }
        return result
    }
}
