import Foundation
import ICYWire
import LameEncoding

/// One encoded track of the station's loop.
package struct StationTrack: Sendable, Hashable {
    /// Position in `StationProgram.tracks`.
    package let index: Int
    package let title: String
    /// Hz of the sine tone, distinct per track so a decoder can tell tracks apart.
    package let frequency: Double
    /// Whole frames (MPEG from LAME, ADTS from ffmpeg), as the encoder produced them for this track
    /// alone (Ogg: the track's whole link, pages).
    package let bytes: [UInt8]
    /// Where `bytes` starts in `StationProgram.loop`.
    package let startOffset: Int
    /// Start of each frame, relative to `startOffset`.
    package let frameOffsets: [Int]
    /// Playing time of the frames (encoder delay and final padding included).
    package let seconds: Double
    /// Seconds of tone (fade-out included), then of digital silence, in the PCM that was encoded.
    package let toneSeconds: Double
    package let gapSeconds: Double

    package var endOffset: Int { startOffset + bytes.count }
    package var loopRange: Range<Int> { startOffset..<endOffset }
    package var frameCount: Int { frameOffsets.count }
}

/// The station's audio: every track encoded once, concatenated into a loop the station plays forever.
///
/// Two coordinate systems: a *loop offset* is an index into `loop`; a *stream offset* counts bytes
/// of the endless stream (loop after loop), so stream offset `s` holds `loop[s % loop.count]`.
package struct StationProgram: Sendable {
    /// Frequencies for the first tracks (A4, C#5, E5, A5, B5, D6, E6, A6); later tracks drop an octave per round.
    package static let baseFrequencies: [Double] = [440, 554.37, 659.25, 880, 987.77, 1174.66, 1318.51, 1760]

    package let tracks: [StationTrack]
    package let loop: [UInt8]
    /// Start of every frame in `loop`, ascending.
    package let frameOffsets: [Int]
    package let sampleRate: Int
    package let channels: Int
    /// Kilobits per second: nominal (LAME's CBR, or what ffmpeg's AAC encoder aims at).
    package let bitrate: Int
    /// Audio bytes per second the station sends in realtime: the nominal rate for CBR MP3, the
    /// loop's real average for AAC (whose frames vary; silence costs almost nothing).
    package let bytesPerSecond: Int
    package let samplesPerFrame: Int

    /// Generates and encodes one track per title. Each track gets a fresh encoder and is flushed,
    /// so its bytes are whole frames that decode on their own (no bit reservoir crosses a track).
    package init(configuration: StationConfiguration) throws(StationError) {
        try configuration.validate()
        let tones = ToneGenerator(sampleRate: configuration.sampleRate, channels: configuration.channels)
        var tracks: [StationTrack] = []
        var loop: [UInt8] = []
        var frameOffsets: [Int] = []
        var samplesPerFrame = 1152

        for (index, title) in configuration.titles.enumerated() {
            let frequency = Self.frequency(ofTrack: index)
            let gap = configuration.gapSeconds(ofTrack: index)
            // RMS of a sine is peak / sqrt(2): the gain that puts the passage at its RMS level.
            let quiet = configuration.quietPassage.map { passage in
                (start: passage.startSeconds, seconds: passage.seconds,
                 gain: pow(10, passage.levelDBFS / 20) * 2.0.squareRoot() / tones.amplitude)
            }
            let pcm = tones.samples(
                frequency: frequency, toneSeconds: configuration.trackSeconds, gapSeconds: gap,
                fadeOutSeconds: configuration.fadeOutSeconds, quiet: quiet)
            let encoded: EncodedTrack
            switch configuration.codec {
            case .mp3: encoded = try Self.encodeMP3(pcm, trackIndex: index, configuration: configuration)
            case .aac: encoded = try Self.encodeAAC(pcm, trackIndex: index, configuration: configuration)
            case .vorbis, .opus:
                encoded = try Self.encodeOgg(pcm, trackIndex: index, title: title, configuration: configuration)
            }
            if let perFrame = encoded.samplesPerFrame { samplesPerFrame = perFrame }
            let start = loop.count
            tracks.append(StationTrack(
                index: index, title: title, frequency: frequency, bytes: encoded.bytes, startOffset: start,
                frameOffsets: encoded.offsets, seconds: encoded.seconds,
                toneSeconds: configuration.trackSeconds, gapSeconds: gap))
            frameOffsets += encoded.offsets.map { $0 + start }
            loop += encoded.bytes
        }

        self.tracks = tracks
        self.loop = loop
        self.frameOffsets = frameOffsets
        self.sampleRate = configuration.sampleRate
        self.channels = configuration.channels
        self.bitrate = configuration.bitrate
        // Ogg pages are not of one length in time: pace by their average (the "frame" of an
        // Ogg station is a page, the unit a listener can start at).
        self.samplesPerFrame = configuration.codec.isOgg
            ? max(1, Int(tracks.reduce(0) { $0 + $1.seconds } * Double(configuration.sampleRate)) / max(1, frameOffsets.count))
            : samplesPerFrame
        let loopSeconds = configuration.codec.isOgg
            ? tracks.reduce(0) { $0 + $1.seconds }
            : Double(frameOffsets.count * samplesPerFrame) / Double(configuration.sampleRate)
        switch configuration.codec {
        case .mp3: self.bytesPerSecond = configuration.bytesPerSecond
        // Variable-length frames and pages: the loop's real byte rate, so realtime is real time.
        case .aac, .vorbis, .opus: self.bytesPerSecond = max(1, Int(Double(loop.count) / max(loopSeconds, 0.001)))
        }
    }

    /// One track encoded: its bytes, where its frames (or Ogg pages) start, its length, and the
    /// samples per frame of a framed codec (nil for Ogg).
    private struct EncodedTrack {
        var bytes: [UInt8]
        var offsets: [Int]
        var seconds: Double
        var samplesPerFrame: Int?

        /// A framed track: its length is its frames.
        init(bytes: [UInt8], offsets: [Int], samplesPerFrame: Int, sampleRate: Int) {
            self.bytes = bytes
            self.offsets = offsets
            self.seconds = Double(offsets.count * samplesPerFrame) / Double(sampleRate)
            self.samplesPerFrame = samplesPerFrame
        }

        init(oggBytes: [UInt8], pageOffsets: [Int], seconds: Double) {
            self.bytes = oggBytes
            self.offsets = pageOffsets
            self.seconds = seconds
            self.samplesPerFrame = nil
        }
    }

    private static func encodeMP3(_ pcm: [Int16], trackIndex index: Int,
                                  configuration: StationConfiguration) throws(StationError) -> EncodedTrack {
        let bytes: [UInt8]
        do {
            let encoder = try MP3Encoder(
                sampleRate: configuration.sampleRate, channels: configuration.channels,
                bitrate: configuration.bitrate, quality: configuration.encoderQuality)
            bytes = encoder.encode(interleaved: pcm) + encoder.flush()
        } catch {
            throw .encoding(error.description)
        }
        let frames = try Self.walkFrames(bytes, trackIndex: index)
        guard case .mpeg(let first)? = frames.headers.first else { throw .encoding("track \(index) has no frames") }
        // LAME may round a bitrate it does not support; icy-br would then lie.
        guard first.bitrate == configuration.bitrate * 1000, first.sampleRate == configuration.sampleRate else {
            throw .encoding("LAME produced \(first.bitrate / 1000) kbps at \(first.sampleRate) Hz")
        }
        return EncodedTrack(bytes: bytes, offsets: frames.offsets, samplesPerFrame: first.samplesPerFrame,
                            sampleRate: configuration.sampleRate)
    }

    private static func encodeAAC(_ pcm: [Int16], trackIndex index: Int,
                                  configuration: StationConfiguration) throws(StationError) -> EncodedTrack {
        let bytes = try AACToneEncoder.encode(
            pcm, sampleRate: configuration.sampleRate, channels: configuration.channels,
            bitrate: configuration.bitrate)
        let frames = try Self.walkFrames(bytes, trackIndex: index)
        guard case .adts(let first)? = frames.headers.first else { throw .encoding("track \(index) has no ADTS frames") }
        guard first.sampleRate == configuration.sampleRate, first.channels == configuration.channels else {
            throw .encoding("ffmpeg produced \(first.sampleRate) Hz, \(first.channels) channels")
        }
        return EncodedTrack(bytes: bytes, offsets: frames.offsets, samplesPerFrame: first.samplesPerFrame,
                            sampleRate: configuration.sampleRate)
    }

    private static func encodeOgg(_ pcm: [Int16], trackIndex index: Int, title: String,
                                  configuration: StationConfiguration) throws(StationError) -> EncodedTrack {
        var links: [[UInt8]]
        if let linkSeconds = configuration.oggLinkSeconds {
            // The track's first `linkSeconds`, encoded once and sent as link after link.
            let copies = max(1, Int((configuration.trackSeconds / linkSeconds).rounded()))
            let piece = Array(pcm.prefix(Int(linkSeconds * Double(configuration.sampleRate)) * configuration.channels))
            let link = try OggTrackEncoder.encode(
                interleaved: piece, sampleRate: configuration.sampleRate, channels: configuration.channels,
                bitrate: configuration.bitrate, codec: configuration.codec, title: title)
            links = try OggTrackEncoder.relinked(link, copies: copies, trackIndex: index)
        } else {
            links = [try OggTrackEncoder.encode(
                interleaved: pcm, sampleRate: configuration.sampleRate, channels: configuration.channels,
                bitrate: configuration.bitrate, codec: configuration.codec, title: title)]
        }
        if configuration.oggSkeleton {
            links = try links.map { link throws(StationError) in try OggSkeletonWrapper.wrap(link, trackIndex: index) }
        }
        var granules: Int64 = 0
        for link in links { granules += try OggTrackEncoder.walkPages(link, trackIndex: index).lastGranule }
        let bytes = Array(links.joined())
        let pages = try OggTrackEncoder.walkPages(bytes, trackIndex: index)
        // Opus counts granules at 48 kHz whatever the input rate.
        let granuleRate = configuration.codec == .opus ? 48000 : configuration.sampleRate
        return EncodedTrack(oggBytes: bytes, pageOffsets: pages.offsets, seconds: Double(granules) / Double(granuleRate))
    }

    package static func frequency(ofTrack index: Int) -> Double {
        let round = index / baseFrequencies.count
        return baseFrequencies[index % baseFrequencies.count] / Double(1 << min(round, 6))
    }

    /// Offsets of the frames of `bytes`, which must be nothing but whole valid frames (MPEG or ADTS).
    private static func walkFrames(_ bytes: [UInt8], trackIndex: Int) throws(StationError)
        -> (offsets: [Int], headers: [AudioFrameHeader]) {
        var offsets: [Int] = []
        var headers: [AudioFrameHeader] = []
        var position = 0
        while position < bytes.count {
            let found = bytes.withUnsafeBytes { AudioFrameHeader(at: $0, offset: position) }
            guard let header = found, position + header.frameLength <= bytes.count else {
                throw .encoding("track \(trackIndex) is not whole audio frames at byte \(position)")
            }
            offsets.append(position)
            if headers.isEmpty { headers.append(header) }
            position += header.frameLength
        }
        return (offsets, headers)
    }

    package var loopSeconds: Double { Double(frameOffsets.count * samplesPerFrame) / Double(sampleRate) }

    /// `count` bytes of the endless stream starting at stream offset `offset` (wrapping around the loop).
    package func audio(from offset: Int, count: Int) -> [UInt8] {
        precondition(offset >= 0 && count >= 0, "offset and count must not be negative")
        var result: [UInt8] = []
        result.reserveCapacity(count)
        var position = offset % loop.count
        var remaining = count
        while remaining > 0 {
            let n = min(remaining, loop.count - position)
            result += loop[position..<position + n]
            remaining -= n
            position = 0
        }
        return result
    }

    /// The track that plays at loop offset `offset`; offsets past the loop wrap.
    package func track(atLoopOffset offset: Int) -> StationTrack {
        let position = ((offset % loop.count) + loop.count) % loop.count
        // Tracks are few; the last one whose start is not after `position`.
        return tracks.last { $0.startOffset <= position } ?? tracks[0]
    }

    /// The track that plays at stream offset `offset`.
    package func track(atStreamOffset offset: Int) -> StationTrack { track(atLoopOffset: offset) }

    /// Stream offset of frame number `index` of the endless stream (frame 0 starts at 0).
    package func streamOffset(ofFrame index: Int) -> Int {
        let (round, frame) = index.quotientAndRemainder(dividingBy: frameOffsets.count)
        return round * loop.count + frameOffsets[frame]
    }

    /// Number of the first frame that starts at or after stream offset `offset`.
    package func frameIndex(atOrAfter offset: Int) -> Int {
        let (round, position) = offset.quotientAndRemainder(dividingBy: loop.count)
        // Binary search for the first frame offset >= position.
        var low = 0, high = frameOffsets.count
        while low < high {
            let mid = (low + high) / 2
            if frameOffsets[mid] < position { low = mid + 1 } else { high = mid }
        }
        return round * frameOffsets.count + low
    }

    /// Audio bytes a connection starting at `startOffset` gets when limited to `seconds`: whole
    /// frames, as few as play for at least `seconds`.
    package func audioByteCount(from startOffset: Int, seconds: Double) -> Int {
        let frames = Int((seconds * Double(sampleRate) / Double(samplesPerFrame)).rounded(.up))
        let first = frameIndex(atOrAfter: startOffset)
        return streamOffset(ofFrame: first + max(frames, 1)) - startOffset
    }

    /// Frame-aligned stream offset that plays `elapsedSeconds` after the station's clock started.
    package func liveOffset(elapsedSeconds: Double) -> Int {
        streamOffset(ofFrame: Int(max(0, elapsedSeconds) * Double(sampleRate) / Double(samplesPerFrame)))
    }
}
