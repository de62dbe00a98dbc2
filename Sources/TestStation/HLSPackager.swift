import Foundation
import ICYWire

/// The station's loop cut into HLS segments, as a real packager would: whole frames per segment,
/// titles as timed ID3 (in packed audio or an MPEG-TS metadata stream) or in the playlist's
/// `#EXTINF` lines, and media playlists for a live sliding window or for VOD.
///
/// Pure: segments are built once from a `StationProgram`; sequence number `n` is segment
/// `n % segments.count` of the loop, with its timestamps moved on by whole loops, so a live
/// stream goes on for ever.
package struct HLSPackager: Sendable {
    package enum Container: String, Sendable, CaseIterable {
        /// `.aac` or `.mp3`: an ID3 tag with the transport timestamp and the title, then the frames.
        case packedAudio = "packed-audio"
        /// `.ts`: PAT, PMT, the audio PES and a timed-ID3 PES stream.
        case mpegTS = "mpegts"
        /// `.m4s` after an `#EXT-X-MAP` init segment: `emsg` timed ID3, then `moof` + `mdat`.
        case fmp4
    }

    package enum TitlePlacement: String, Sendable, CaseIterable {
        /// Timed ID3 in the segments (TIT2/TPE1), at every segment's start and where a track starts.
        case timedID3 = "timed-id3"
        /// Timed ID3 only where a track starts, as most live stations send it: a segment that
        /// begins mid-song carries no title.
        case timedID3OnChange = "timed-id3-on-change"

        var isTimedID3: Bool { self == .timedID3 || self == .timedID3OnChange }
        /// `#EXTINF:6.0,title="...",artist="..."` (iHeart's packagers).
        case playlistAttributes = "playlist-attributes"
        /// `#EXTINF:6,Artist - Title`.
        case playlistArtistTitle = "playlist-artist-title"
    }

    package struct Segment: Sendable, Hashable {
        /// Segment index within the loop.
        package let index: Int
        package let bytes: [UInt8]
        package let duration: Double
        /// The track playing at the segment's first sample, "Artist - Title".
        package let title: String
        /// 90 kHz timestamp of the first sample within the loop.
        package let firstTimestamp: UInt64
    }

    package let container: Container
    package let titles: TitlePlacement
    package let segments: [Segment]
    /// Per segment of the loop: whether its head carries the title with `timedID3OnChange` (a
    /// track starts at its first frame, or, in packed audio, since the last segment's head).
    private let startsTrack: [Bool]
    package let targetDuration: Int
    /// The loop's length in 90 kHz ticks.
    package let loopTicks: UInt64
    package let fileExtension: String
    /// fMP4 only: the `#EXT-X-MAP` resource, served as `init.mp4`.
    package let initSegment: [UInt8]?

    /// ffmpeg starts its TS timestamps at 1.4 s; so do we, so no stream starts at 0.
    package static let firstTimestamp: UInt64 = 126_000

    package init(program: StationProgram, codec: StationCodec, container: Container, titles: TitlePlacement,
                 segmentSeconds: Double = 2) throws(StationError) {
        guard codec == .mp3 || codec == .aac else { throw .invalidConfiguration("HLS serves MP3 or AAC, not \(codec)") }
        guard segmentSeconds >= 0.5 else { throw .invalidConfiguration("HLS segments must be at least 0.5 s") }
        self.container = container
        self.titles = titles
        switch container {
        case .mpegTS: self.fileExtension = "ts"
        case .fmp4: self.fileExtension = "m4s"
        case .packedAudio: self.fileExtension = codec == .aac ? "aac" : "mp3"
        }
        let framesPerSegment = max(1, Int((segmentSeconds * Double(program.sampleRate) / Double(program.samplesPerFrame)).rounded()))
        let loop = LoopFrames(program: program)
        let frames = loop.frames
        let fmp4 = container == .fmp4 ? try Self.fmp4Writer(loop, codec: codec) : nil
        self.initSegment = fmp4?.initSegment()
        var segments: [Segment] = []
        var trackStarts: [Bool] = []
        var start = 0
        while start < frames.count {
            let chunk = start..<min(frames.count, start + framesPerSegment)
            let timestamp = Self.firstTimestamp + loop.ticks(frames: start)
            let track = program.tracks[frames[start].track]
            let info = TrackInfo(streamTitle: track.title)
            let bytes: [UInt8]
            // Packed audio has titles only at a segment's head: a track starting inside a segment
            // is announced at the next one's, as packagers do.
            let startsTrack = start == 0 || frames[start].track != frames[container == .packedAudio ? start - framesPerSegment : start - 1].track
            let tagTitle = titles == .timedID3 || (titles == .timedID3OnChange && startsTrack) ? info : nil
            switch container {
            case .packedAudio:
                bytes = HLSSegmentWriters.packedAudio(frames: loop.audio(chunk), firstSampleTimestamp: timestamp,
                                                      artist: tagTitle?.artist, title: tagTitle?.title)
            case .mpegTS:
                bytes = loop.mpegTSSegment(chunk, codec: codec, titles: titles, headTitle: tagTitle)
            case .fmp4:
                let events = loop.fmp4Events(chunk, titles: titles, headTitle: tagTitle)
                bytes = fmp4?.mediaSegment(sequenceNumber: segments.count, decodeTime: UInt64(start * program.samplesPerFrame),
                                           frames: chunk.map { program.loop[frames[$0].range] }, events: events) ?? []
            }
            let duration = Double(chunk.count * program.samplesPerFrame) / Double(program.sampleRate)
            segments.append(Segment(index: segments.count, bytes: bytes, duration: duration, title: track.title, firstTimestamp: timestamp))
            trackStarts.append(startsTrack)
            start += chunk.count
        }
        self.segments = segments
        self.startsTrack = trackStarts
        self.loopTicks = loop.ticks(frames: frames.count)
        // RFC 8216 4.3.3.1: each EXTINF rounded to the nearest integer is at most the target duration.
        self.targetDuration = max(1, Int(segments.map(\.duration).max()?.rounded() ?? 1))
    }

    /// The fMP4 writer for the loop's codec; AAC's configuration is read from its first frame.
    private static func fmp4Writer(_ loop: LoopFrames, codec: StationCodec) throws(StationError) -> HLSFMP4Writer {
        let program = loop.program
        var writerCodec = HLSFMP4Writer.Codec.mp3
        if codec == .aac {
            guard let first = loop.frames.first, let header = ADTSHeader(program.loop[first.range]),
                  let frequencyIndex = Self.aacSampleRates.firstIndex(of: header.sampleRate)
            else { throw .invalidConfiguration("the AAC loop does not start with an ADTS frame") }
            writerCodec = .aac(objectType: header.profile, frequencyIndex: frequencyIndex, channelConfiguration: header.channelConfiguration)
        }
        return HLSFMP4Writer(codec: writerCodec, sampleRate: program.sampleRate, channels: program.channels,
                             samplesPerFrame: program.samplesPerFrame)
    }

    /// The station's loop as frames, each with its track (index) and byte range in the loop.
    private struct LoopFrames {
        let program: StationProgram
        let frames: [(track: Int, range: Range<Int>)]

        init(program: StationProgram) {
            self.program = program
            var frames: [(track: Int, range: Range<Int>)] = []
            for track in program.tracks {
                for (number, offset) in track.frameOffsets.enumerated() {
                    let end = number + 1 < track.frameOffsets.count ? track.frameOffsets[number + 1] : track.bytes.count
                    frames.append((track.index, track.startOffset + offset..<track.startOffset + end))
                }
            }
            self.frames = frames
        }

        /// Computed from the sample count each time: a per-frame tick count (2089.8 at 44.1 kHz) would drift.
        func ticks(frames: Int) -> UInt64 {
            UInt64(frames) * UInt64(program.samplesPerFrame) * UInt64(HLSSegmentWriters.clockRate) / UInt64(program.sampleRate)
        }

        func audio(_ indices: Range<Int>) -> [UInt8] {
            indices.flatMap { program.loop[frames[$0].range] }
        }

        /// Whether the track changes at frame `index` (after the first).
        func startsTrack(at index: Int) -> Bool {
            frames[index].track != frames[index - 1].track
        }

        func id3(forTrackAt index: Int) -> [UInt8] {
            let info = TrackInfo(streamTitle: program.tracks[frames[index].track].title)
            return HLSSegmentWriters.timedID3Tag(transportTimestamp: nil, artist: info.artist, title: info.title)
        }

        func mpegTSSegment(_ chunk: Range<Int>, codec: StationCodec, titles: TitlePlacement,
                           headTitle: TrackInfo?) -> [UInt8] {
            var writer = MPEGTSWriter(audio: codec == .aac ? .aacADTS : .mpegAudio, timedMetadata: titles.isTimedID3)
            if let headTitle {
                writer.writeTimedMetadata(HLSSegmentWriters.timedID3Tag(transportTimestamp: nil, artist: headTitle.artist, title: headTitle.title),
                                          pts: HLSPackager.firstTimestamp + ticks(frames: chunk.lowerBound))
            }
            var pesStart = chunk.lowerBound
            // One PES per few frames, as ffmpeg does: keeps PES small and PTS frequent.
            while pesStart < chunk.upperBound {
                let pesEnd = min(chunk.upperBound, pesStart + 8)
                // A track that starts inside the segment gets its tag at its first frame's time.
                for frameIndex in pesStart..<pesEnd where titles.isTimedID3 && frameIndex > chunk.lowerBound
                    && startsTrack(at: frameIndex) {
                    writer.writeTimedMetadata(id3(forTrackAt: frameIndex),
                                              pts: HLSPackager.firstTimestamp + ticks(frames: frameIndex))
                }
                writer.writeAudio(audio(pesStart..<pesEnd), pts: HLSPackager.firstTimestamp + ticks(frames: pesStart))
                pesStart = pesEnd
            }
            return writer.bytes
        }

        /// The segment's timed ID3 as `emsg` events: its head's title (if it carries one) and
        /// each track that starts inside it, at their sample times.
        func fmp4Events(_ chunk: Range<Int>, titles: TitlePlacement, headTitle: TrackInfo?) -> [(time: UInt64, id3: [UInt8])] {
            var events: [(time: UInt64, id3: [UInt8])] = []
            for frameIndex in chunk where frameIndex == chunk.lowerBound ? headTitle != nil
                : titles.isTimedID3 && startsTrack(at: frameIndex) {
                events.append((UInt64(frameIndex * program.samplesPerFrame), id3(forTrackAt: frameIndex)))
            }
            return events
        }
    }

    static let aacSampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// The name of segment `sequence` (any sequence number: the loop repeats).
    package func segmentName(_ sequence: Int) -> String { "seg\(sequence).\(fileExtension)" }

    /// The bytes of segment `sequence`. Packed audio carries its timestamp in its tag, so later
    /// loops get a new tag; MPEG-TS and fMP4 timestamps restart with each loop behind a discontinuity.
    package func segmentBytes(_ sequence: Int) -> [UInt8] {
        let segment = segments[sequence % segments.count]
        guard container == .packedAudio else { return segment.bytes }
        let loops = UInt64(sequence / segments.count)
        let header = ID3v2Header(segment.bytes)!
        let audio = segment.bytes[header.totalLength...]
        let info = TrackInfo(streamTitle: segment.title)
        let timestamp = (segment.firstTimestamp + loops * loopTicks) & 0x1_FFFF_FFFF
        let tagged = titles == .timedID3 || (titles == .timedID3OnChange && startsTrack[segment.index])
        return HLSSegmentWriters.packedAudio(frames: audio, firstSampleTimestamp: timestamp,
                                             artist: tagged ? info.artist : nil, title: tagged ? info.title : nil)
    }

    /// A media playlist of the segments `window` (sequence numbers); `endList` for VOD.
    package func mediaPlaylist(window: Range<Int>, endList: Bool) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(container == .fmp4 ? 7 : 3)", "#EXT-X-TARGETDURATION:\(targetDuration)",
                     "#EXT-X-MEDIA-SEQUENCE:\(window.lowerBound)"]
        if endList { lines.append("#EXT-X-PLAYLIST-TYPE:VOD") }
        if container == .fmp4 { lines.append("#EXT-X-MAP:URI=\"init.mp4\"") }
        for sequence in window {
            let segment = segments[sequence % segments.count]
            if container != .packedAudio, sequence % segments.count == 0, sequence > 0, sequence > window.lowerBound {
                lines.append("#EXT-X-DISCONTINUITY")
            }
            let duration = String(format: "%.3f", segment.duration)
            let info = TrackInfo(streamTitle: segment.title)
            switch titles {
            case .timedID3, .timedID3OnChange:
                lines.append("#EXTINF:\(duration),")
            case .playlistAttributes:
                lines.append("#EXTINF:\(duration),title=\"\(Self.escaped(info.title))\",artist=\"\(Self.escaped(info.artist ?? ""))\"")
            case .playlistArtistTitle:
                lines.append("#EXTINF:\(duration),\(StationResponses.oneLine(segment.title))")
            }
            lines.append(segmentName(sequence))
        }
        if endList { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A master playlist of variants (URI and bits per second).
    package static func masterPlaylist(variants: [(uri: String, bandwidth: Int, codecs: String)]) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:3"]
        for variant in variants {
            lines.append("#EXT-X-STREAM-INF:BANDWIDTH=\(variant.bandwidth),CODECS=\"\(variant.codecs)\"")
            lines.append(variant.uri)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func escaped(_ text: String) -> String {
        StationResponses.oneLine(text).replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
