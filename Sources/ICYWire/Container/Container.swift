/// How a body's audio bytes are packed, decided once per connection: it picks the container
/// reader that turns them into packets. A new container (MPEG-TS, fMP4) is one more case here
/// and one more reader, not a question any sink asks.
package enum Container: Sendable, Hashable {
    /// MPEG audio or ADTS frames back to back (the framer locks on either).
    case audioFrames
    /// A chained Ogg stream of Vorbis or Opus links, read page by page.
    case ogg
    /// The content type does not say (octet-stream, none): the first bytes decide between the two.
    case undecided
}

extension PayloadKind {
    /// The container of an audio body; nil for a body that is not audio.
    package var container: Container? {
        switch self {
        case .audio(nil): .undecided
        case .audio: .audioFrames
        case .ogg: .ogg
        case .playlist, .unsupported, .other: nil
        }
    }
}
