import AirtapIngest
import AudioDecoding
import AudioFingerprinting
import ICYWire
import LoudnessMeasuring
import RecordingRules

/// What listens to one track's audio while it is recorded: its EBU R128 loudness (ReplayGain)
/// and the Chromaprint fingerprint of its first two minutes (the library's index). Each packet
/// is decoded once, as it is appended, and both read the same samples, so the track's gain and
/// fingerprint are known the moment it closes, without reading the file again.
///
/// The decoder starts with the track's first packet, as a decoder reading the finished file
/// does (the file holds exactly the packets appended, its Info frame aside, which every reader
/// drops): the samples are the file's, so the fingerprint is the one `library scan` computes
/// for the same file.
///
/// The split search decodes only a few seconds around each title change, with decoders it
/// primes and throws away, before the cut that decides which track a packet belongs to: it
/// cannot hand its samples over, and the overlap is a few percent of a track. Used under the
/// recorder's lock only.
final class TrackListeners {
    private let decoder: any AudioDecoder
    private let meter: LoudnessMeter?
    private var fingerprinter: AudioFingerprinter?
    /// Made once the first two minutes are in: Chromaprint's context (about 300 kB) is not kept
    /// for the rest of the track.
    private var fingerprint: Fingerprint?
    /// libebur128 refused samples: the measurement is incomplete and gives no tag.
    private var loudnessFailed = false
    private var fingerprintFailed = false

    /// Nil when nothing listens or there is no decoder for `codec`. Without Chromaprint the
    /// track has no fingerprint (the library logs it), and loudness is still measured.
    init?(codec: AudioCodec, measuresLoudness: Bool, fingerprints: Bool) {
        guard measuresLoudness || fingerprints, let decoder = try? AudioDecoders.make(for: codec) else { return nil }
        self.decoder = decoder
        meter = measuresLoudness ? LoudnessMeter() : nil
        fingerprinter = fingerprints ? try? AudioFingerprinter(maxSeconds: AudioFileFingerprint.fingerprintSeconds) : nil
        fingerprintFailed = fingerprints && fingerprinter == nil
        if meter == nil, fingerprinter == nil { return nil }
    }

    func add(_ packet: Packet) {
        let fingerprinting = fingerprinter.map { !$0.hasEnough } ?? false
        guard meter != nil && !loudnessFailed || fingerprinting else { return }
        do {
            try decoder.decode(packet.bytes) { format, samples in
                if let meter, !loudnessFailed, !meter.add(samples, sampleRate: format.sampleRate, channels: format.channels) {
                    loudnessFailed = true
                }
                if fingerprinting, let fingerprinter {
                    do { try fingerprinter.feed(sampleRate: format.sampleRate, channels: format.channels, samples) } catch {
                        fingerprintFailed = true
                        self.fingerprinter = nil
                    }
                }
            }
        } catch {
            // Beyond the decoder's resync: it starts afresh with the next packet, as the player's
            // and a file reader's do.
            decoder.reset()
        }
        if let fingerprinter, fingerprinter.hasEnough { fingerprint = finishFingerprint() }
    }

    /// The track's ReplayGain; nil when not measured or nothing measurable was decoded (silence
    /// below the absolute gate, a codec the decoder refused).
    var replayGain: ReplayGain? {
        guard let meter, !loudnessFailed, let measured = meter.result() else { return nil }
        return ReplayGain(integratedLoudness: measured.integratedLoudness, samplePeak: measured.samplePeak)
    }

    /// The fingerprint of the track's first two minutes; nil when not asked for or Chromaprint
    /// failed, empty when too little audio decoded.
    func finishFingerprint() -> Fingerprint? {
        guard !fingerprintFailed, let fingerprinter else { return fingerprint }
        self.fingerprinter = nil
        return try? fingerprinter.finish()
    }
}
