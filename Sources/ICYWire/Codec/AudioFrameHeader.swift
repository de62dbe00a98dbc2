/// The codecs a radio stream carries in frames this module can find.
package enum AudioCodec: String, Sendable, Hashable {
    case mp3 = "MP3", mp2 = "MP2", mp1 = "MP1", aac = "AAC"
    /// In Ogg: packets are whole pages (`OggPageHeader`).
    case vorbis = "Vorbis", opus = "Opus"

    package var fileExtension: String {
        switch self {
        case .mp3: "mp3"
        case .mp2: "mp2"
        case .mp1: "mp1"
        case .aac: "aac"
        case .vorbis: "ogg"
        case .opus: "opus"
        }
    }

    package var mimeType: String {
        switch self {
        case .mp3, .mp2, .mp1: "audio/mpeg"
        case .aac: "audio/aac"
        case .vorbis, .opus: "audio/ogg"
        }
    }

    /// The stream is a chain of links (Ogg), each opening with its own stream headers and title:
    /// a link boundary is an exact cut, titles come only with a new link (never in ICY blocks),
    /// and a file that holds a link from its first packet to its last is whole.
    package var isChained: Bool {
        switch self {
        case .mp3, .mp2, .mp1, .aac: false
        case .vorbis, .opus: true
        }
    }

    /// How a recording of this codec carries its tags.
    package var tagFormat: TagFormat {
        switch self {
        case .mp3, .mp2, .mp1, .aac: .id3v2
        case .vorbis, .opus: .vorbisComments
        }
    }
}

/// Where a recording's tags go: an ID3v2 tag in front of the audio, or fields added to the
/// comment header each link carries (Vorbis comments, OpusTags).
package enum TagFormat: Sendable, Hashable {
    case id3v2
    case vorbisComments
}

/// What a packet is: the header of one MPEG audio or ADTS frame, or of one Ogg page.
package enum AudioFrameHeader: Sendable, Hashable {
    case mpeg(MP3FrameHeader)
    case adts(ADTSHeader)
    /// One Ogg page of a Vorbis or Opus link: a page, not a frame (it may hold parts of several
    /// codec packets), so it says where it sits in its link instead. Boxed: it is five times the
    /// size of a frame's header, and every packet pays for the largest case (a few pages a
    /// second pay for the box instead).
    indirect case oggPage(OggPageHeader)

    /// The whole frame in bytes, header included.
    package var frameLength: Int {
        switch self {
        case .mpeg(let header): header.frameLength
        case .adts(let header): header.frameLength
        case .oggPage(let header): header.pageLength
        }
    }

    package var samplesPerFrame: Int {
        switch self {
        case .mpeg(let header): header.samplesPerFrame
        case .adts(let header): header.samplesPerFrame
        case .oggPage(let header): header.samples
        }
    }

    package var sampleRate: Int {
        switch self {
        case .mpeg(let header): header.sampleRate
        case .adts(let header): header.sampleRate
        case .oggPage(let header): header.sampleRate
        }
    }

    /// 0 for ADTS channel configuration 0 (layout carried in the payload).
    package var channels: Int {
        switch self {
        case .mpeg(let header): header.channels
        case .adts(let header): header.channels
        case .oggPage(let header): header.channels
        }
    }

    package var codec: AudioCodec {
        switch self {
        case .mpeg(let header):
            switch header.layer {
            case .layer1: .mp1
            case .layer2: .mp2
            case .layer3: .mp3
            }
        case .adts: .aac
        case .oggPage(let header): header.codec == .opus ? .opus : .vorbis
        }
    }

    /// Bits per second: the nominal rate for MPEG; for ADTS, which has no bitrate field,
    /// the rate this frame's length implies.
    package var bitrate: Int? {
        switch self {
        case .mpeg(let header):
            return header.bitrate
        case .adts(let header):
            return header.frameLength * 8 * header.sampleRate / header.samplesPerFrame
        case .oggPage(let header):
            return header.nominalBitrate
        }
    }

    /// Carries the codec's stream headers and no audio (an Ogg link's identification, comment
    /// and setup pages): what a listener or a file that joins mid-stream needs before the audio.
    package var isStreamHeader: Bool {
        switch self {
        case .mpeg, .adts: false
        case .oggPage(let header): header.kind == .header
        }
    }

    /// A link starts here: new stream headers, and with them a title, follow.
    package var startsLink: Bool {
        switch self {
        case .mpeg, .adts: false
        case .oggPage(let header): header.isLinkStart
        }
    }

    /// The last packet of a link: a file that ends here holds the link to its end.
    package var endsLink: Bool {
        switch self {
        case .mpeg, .adts: false
        case .oggPage(let header): header.isLinkEnd
        }
    }

    /// Continues a codec packet begun in the packet before: a decoder cannot start here.
    package var continuesPacket: Bool {
        switch self {
        case .mpeg, .adts: false
        case .oggPage(let header): header.continuesPacket
        }
    }

    /// Seconds of audio in this frame.
    package var duration: Double {
        sampleRate > 0 ? Double(samplesPerFrame) / Double(sampleRate) : 0
    }

    /// Whether two frames can belong to one stream: the fields an encoder never changes
    /// between frames. Bitrate (VBR) and padding do change; MPEG channel mode may switch
    /// between stereo and joint stereo, so it is not compared.
    package func isCompatible(with other: AudioFrameHeader) -> Bool {
        switch (self, other) {
        case (.mpeg(let a), .mpeg(let b)):
            a.version == b.version && a.layer == b.layer && a.sampleRate == b.sampleRate
        case (.adts(let a), .adts(let b)):
            a.profile == b.profile && a.sampleRate == b.sampleRate
                && a.channelConfiguration == b.channelConfiguration
        case (.oggPage(let a), .oggPage(let b)):
            a.codec == b.codec && a.sampleRate == b.sampleRate && a.channels == b.channels
        default:
            false
        }
    }

    /// Tries MPEG, then ADTS, at `offset`; `nil` if the bytes there are too few or invalid.
    package init?(at bytes: UnsafeRawBufferPointer, offset: Int) {
        guard case .found(let header) = Self.probe(bytes, at: offset) else { return nil }
        self = header
    }

    /// The outcome of looking for a header at one offset, keeping "too few bytes yet"
    /// apart from "not a header" so incremental callers know when to wait.
    enum Probe: Sendable, Hashable {
        case found(AudioFrameHeader)
        case invalid
        case needMoreBytes
    }

    /// Looks for a header at `offset`. Rejects as early as the available bytes allow, so
    /// `needMoreBytes` only comes back for a prefix that could still start a valid header.
    static func probe(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Probe {
        let available = bytes.count - offset
        guard offset >= 0, available > 0 else { return .needMoreBytes }
        guard bytes[offset] == 0xFF else { return .invalid }
        guard available >= 2 else { return .needMoreBytes }
        let b1 = bytes[offset + 1]
        guard b1 & 0xE0 == 0xE0 else { return .invalid }

        // MPEG audio reserves layer bits 00, which ADTS requires: the two cannot be confused.
        if b1 & 0x06 != 0 {
            guard available >= 4 else { return .needMoreBytes }
            guard let header = MP3FrameHeader(bytes[offset], b1, bytes[offset + 2], bytes[offset + 3]) else {
                return .invalid
            }
            return .found(.mpeg(header))
        }
        guard b1 & 0xF0 == 0xF0 else { return .invalid }
        guard available >= 7 else { return .needMoreBytes }
        guard let header = ADTSHeader(
            bytes[offset], b1, bytes[offset + 2], bytes[offset + 3],
            bytes[offset + 4], bytes[offset + 5], bytes[offset + 6]
        ) else { return .invalid }
        return .found(.adts(header))
    }
}
