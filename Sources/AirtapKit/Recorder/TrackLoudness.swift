import AudioDecoding
import ICYWire
import LoudnessMeasuring

/// Measures one track's EBU R128 loudness while it is recorded: each packet is decoded once,
/// as it is appended, and the samples go to libebur128 (`LoudnessMeter`), so the track's
/// ReplayGain is known the moment it closes, without reading the file again.
///
/// The split search decodes only a few seconds around each title change, with decoders it
/// primes and throws away: it cannot hand its samples over, and the overlap is a few percent
/// of a track. Used under the recorder's lock only.
final class TrackLoudness {
    private let decoder: any AudioDecoder
    private let meter = LoudnessMeter()
    /// libebur128 refused samples: the measurement is incomplete and gives no tag.
    private var failed = false

    /// Nil when there is no decoder for `codec`.
    init?(codec: AudioCodec) {
        guard let decoder = try? AudioDecoders.make(for: codec) else { return nil }
        self.decoder = decoder
    }

    func add(_ packet: Packet) {
        guard !failed else { return }
        do {
            try decoder.decode(packet.bytes) { format, samples in
                if !meter.add(samples, sampleRate: format.sampleRate, channels: format.channels) { failed = true }
            }
        } catch {
            // Beyond the decoder's resync: it starts afresh with the next packet, as the player's does.
            decoder.reset()
        }
    }

    /// The track's ReplayGain; nil when nothing measurable was decoded (silence below the
    /// absolute gate, a codec the decoder refused).
    var replayGain: ReplayGain? {
        guard !failed, let measured = meter.result() else { return nil }
        return ReplayGain(integratedLoudness: measured.integratedLoudness, samplePeak: measured.samplePeak)
    }
}
