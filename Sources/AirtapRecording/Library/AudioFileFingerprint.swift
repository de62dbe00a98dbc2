#if canImport(Glibc)
import Glibc
#endif
import AirtapIngest
import AirtapSupport
import AudioDecoding
import AudioFingerprinting
import FoundationEssentials
import ICYWire
import ID3Tagging
import LoudnessMeasuring
import RecordingRules

/// What a finished or found audio file is, read from its own bytes: framing, tags and audio.
struct AudioFileSummary: Sendable {
    package var codec: AudioCodec?
    package var bitrate: Int?
    /// Seconds of audio in whole frames (all of the file, or up to where reading stopped).
    package var seconds: Double = 0
    package var title: String?
    package var artist: String?
    /// The album: the station's name, in files airtap wrote.
    package var album: String?
    /// Of the first `AudioFingerprinter.maxSeconds` of decoded audio; empty when none decoded.
    package var fingerprint = Fingerprint(values: [])
    /// EBU R128 of all of its audio, when measured (nil: not asked, or nothing measurable).
    package var replayGain: ReplayGain?
}

/// Reads an MP3, AAC (ADTS) or Ogg Vorbis/Opus file through the same framers and decoders the
/// stream uses, and fingerprints its decoded audio. Everything in the file is treated as a
/// station's bytes would be: frames are found by their headers, tags are bounded, a frame the
/// decoder refuses is skipped.
enum AudioFileFingerprint {
    static let chunkBytes = 64 * 1024
    /// Audio fingerprinted from a track's start: Chromaprint's own tools stop at two minutes.
    package static let fingerprintSeconds = 120.0

    /// `wholeFile`: read to the end for the duration and the loudness (a scan); else stop once
    /// the fingerprint has its audio (the recorder knows the duration and measured the loudness).
    package static func read(path: String, wholeFile: Bool, maxSeconds: Double = fingerprintSeconds) throws(AirtapError) -> AudioFileSummary {
        let descriptor: Int32
        do {
            // A file swapped for a FIFO or a link since the folder was listed is refused, never waited on.
            descriptor = try BoundedFileRead.openForReading(path, regularFileOnly: true, followsLinks: false)
        } catch {
            throw .localIO("cannot read \(path): \(error.reason)")
        }
        defer { close(descriptor) }
        let fingerprinter: AudioFingerprinter
        do {
            fingerprinter = try AudioFingerprinter(maxSeconds: maxSeconds)
        } catch {
            throw .localIO("\(path): \(error)")
        }
        var reader = Reader(fingerprinter: fingerprinter, meter: wholeFile ? LoudnessMeter() : nil)
        var chunk = [UInt8](repeating: 0, count: chunkBytes)
        while wholeFile || !fingerprinter.hasEnough {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw .localIO("cannot read \(path): \(errorText(errno))") }
            guard count > 0 else { break }
            reader.push(chunk[..<count])
        }
        reader.finish()
        var summary = reader.summary
        summary.replayGain = reader.replayGain
        do {
            summary.fingerprint = try fingerprinter.finish()
        } catch {
            throw .localIO("\(path): \(error)")
        }
        return summary
    }

    /// Bytes in, frames and tags out, the frames' audio into the fingerprinter.
    private struct Reader {
        let fingerprinter: AudioFingerprinter
        /// Every decoded sample goes here too: one decode for both.
        let meter: LoudnessMeter?
        /// libebur128 refused samples: the measurement is incomplete and says nothing.
        private var meterFailed = false
        var summary = AudioFileSummary()
        private var decoder: (any AudioDecoder)?
        private var decoderCodec: AudioCodec?

        init(fingerprinter: AudioFingerprinter, meter: LoudnessMeter?) {
            self.fingerprinter = fingerprinter
            self.meter = meter
        }

        var replayGain: ReplayGain? {
            guard !meterFailed, let measured = meter?.result() else { return nil }
            return ReplayGain(integratedLoudness: measured.integratedLoudness, samplePeak: measured.samplePeak)
        }

        /// The same reader ingest uses, deciding from the first bytes: "OggS" opens every Ogg
        /// file; anything else goes to the frame finder, which skips what is not a frame (an ID3
        /// tag, a stray header).
        private var container = ContainerReader(.undecided)
        /// A chunk's events, handled once the reader is done with the chunk (the reader is part
        /// of `self`, so it cannot call back into it); kept for the next chunk's.
        private var events: [ContainerEvent] = []

        mutating func push(_ bytes: ArraySlice<UInt8>) {
            var events: [ContainerEvent] = []
            swap(&events, &self.events)
            bytes.withUnsafeBytes { raw in container.push(raw) { events.append($0) } }
            handle(&events)
        }

        mutating func finish() {
            var events: [ContainerEvent] = []
            swap(&events, &self.events)
            container.finish { events.append($0) }
            handle(&events)
        }

        private mutating func handle(_ events: inout [ContainerEvent]) {
            for event in events { handle(event) }
            events.removeAll(keepingCapacity: true)
            self.events = events
        }

        private mutating func handle(_ event: ContainerEvent) {
            switch event {
            case .packet(let packet):
                take(packet)
            case .id3Tag(let tag):
                guard summary.title == nil, summary.artist == nil,
                      let frames = tag.bytes.withUnsafeBytes({ ID3Reader.textFrames(in: $0) }) else { return }
                summary.title = frames.title
                summary.artist = frames.artist
                summary.album = frames["TALB"]
            case .linkStarted(let link, _):
                guard summary.title == nil, summary.artist == nil else { return }
                summary.title = link.comments.title
                summary.artist = link.comments.artist
                summary.album = link.comments["ALBUM"]
            case .format, .skipped, .unsupported, .malformed:
                break
            }
        }

        private mutating func take(_ packet: Packet) {
            // An encoder-info frame (the Info frame airtap writes first in every MP3) is not audio,
            // as ingest drops it from a stream: the decoder gets exactly the packets the recorder
            // appended and fingerprinted live (mpg123 skips such a frame itself; this does not
            // leave that to each decoder).
            if EncoderInfoFrame.isInfoFrame(packet.bytes, header: packet.header) { return }
            let codec = packet.header.codec
            if summary.codec == nil {
                summary.codec = codec
                summary.bitrate = packet.header.bitrate
            }
            // One codec per file: frames of another (garbage that looked like a header) are not audio of it.
            guard codec == summary.codec else { return }
            summary.seconds += packet.duration
            let measuring = meter != nil && !meterFailed
            guard measuring || !fingerprinter.hasEnough else { return }
            if decoder == nil || decoderCodec != codec {
                decoder = try? AudioDecoders.make(for: codec)
                decoderCodec = codec
            }
            guard let decoder else { return }
            let (fingerprinter, meter) = (fingerprinter, measuring ? meter : nil)
            var refused = false
            do {
                try decoder.decode(packet.bytes) { format, samples in
                    if !fingerprinter.hasEnough {
                        try? fingerprinter.feed(sampleRate: format.sampleRate, channels: format.channels, samples)
                    }
                    if let meter, !meter.add(samples, sampleRate: format.sampleRate, channels: format.channels) { refused = true }
                }
            } catch {
                decoder.reset()
            }
            if refused { meterFailed = true }
        }
    }
}
