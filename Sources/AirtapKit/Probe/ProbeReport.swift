import AACDecoding
import AirtapCuts
import AirtapIngest
import AirtapStations
import AirtapSupport
import AudioDecoding
import FoundationEssentials
import ICYWire
import Locking

/// `airtap probe`: prints what a stream is and each title change, as text or JSON lines.
///
/// Runs behind a `QueuedSink`, so printing never holds up the ingest thread.
final class ProbeReport: StreamSink {
    package enum Style: Sendable { case text, json }

    private let style: Style
    private let station: Station
    private let write: @Sendable (String) -> Void
    /// Stream time so far, for the time of each title.
    private let position = Locked((samples: 0, sampleRate: 0))
    /// The station's title delay, until it is reported after the first head.
    private let titleDelay: Locked<TitleDelayStatus?>
    /// Audio bytes and seconds so far, for the average bitrate at the end (a VBR stream's first
    /// frame says little; ADTS has no bitrate field at all).
    private let totals = Locked((bytes: 0, seconds: 0.0))
    /// The first packets, copied, until they are decoded once to learn what the decoder makes of
    /// the stream (AAC profile, output rate): a few frames, then never again.
    private let sample = Locked(DecodeSample())

    struct DecodeSample: Sendable {
        /// FAAD2 reports SBR/PS from the frames it has decoded; eight are plenty.
        static let frameCount = 8
        var packets: [[UInt8]] = []
        var codec: AudioCodec?
        var coreSampleRate = 0
        var isDone = false
    }

    /// With `.json`, the shared `--json` schema (`MachineEvent`), as record, play and serve print it.
    private let json: MachineEventSink?
    private let jsonWriter: MachineEventWriter?

    package init(station: Station, style: Style, titleDelay: TitleDelayStatus? = nil, write: @escaping @Sendable (String) -> Void) {
        self.station = station
        self.titleDelay = Locked(titleDelay)
        self.style = style
        self.write = write
        let writer = style == .json ? MachineEventWriter(write: write) : nil
        jsonWriter = writer
        json = writer.map { MachineEventSink(station: station, writer: $0) }
    }

    package func receive(_ event: StreamEvent) throws {
        switch event {
        case .head(let head):
            if json == nil { report(headLines(head)) }
        case .format(let header):
            position.withLock { $0.sampleRate = header.sampleRate }
            if json == nil { report(["codec     \(Self.describe(header))"]) }
        case .packet(let packet):
            position.withLock { $0.samples += packet.sampleCount }
            totals.withLock {
                $0.bytes += packet.bytes.count
                $0.seconds += packet.duration
            }
            let ready = sample.withLock { sample -> DecodeSample? in
                guard !sample.isDone else { return nil }
                if sample.codec != packet.header.codec { sample = DecodeSample(codec: packet.header.codec) }
                sample.coreSampleRate = packet.header.sampleRate
                sample.packets.append(Array(packet.bytes))
                guard sample.packets.count >= DecodeSample.frameCount else { return nil }
                sample.isDone = true
                return sample
            }
            if let ready { reportDecoded(ready) }
        case .metadata(let change):
            let streamTime = position.withLock { $0.sampleRate > 0 ? Double($0.samples) / Double($0.sampleRate) : 0 }
            let text = "[\(Self.clockText(streamTime))] title: \(change.info.raw.isEmpty ? "(empty)" : change.info.raw)"
            if json == nil { report([text]) }
        case .discontinuity(let position):
            if json == nil { report(["discontinuity at byte \(position)"]) }
        case .connection:
            break
        case .ended(let reason):
            // A stream shorter than the sample: decode what there is.
            let pending = sample.withLock { sample -> DecodeSample? in
                guard !sample.isDone, !sample.packets.isEmpty else { return nil }
                sample.isDone = true
                return sample
            }
            if let pending { reportDecoded(pending) }
            let (bytes, seconds) = totals.withLock { ($0.bytes, $0.seconds) }
            if seconds > 0 {
                let kbps = Int((Double(bytes) * 8 / seconds / 1000).rounded())
                let tenths = Int((seconds * 10).rounded())
                if let jsonWriter {
                    jsonWriter.emit(MachineEvent("bitrate", [("station", .string(station.id)), ("average_kbps", .int(kbps)),
                                                             ("audio_seconds", .number(Double(tenths) / 10))]))
                } else {
                    report(["average   \(kbps) kbps over \(tenths / 10).\(tenths % 10) s of audio"])
                }
            }
            if json == nil { report(["ended     \(reason)"]) }
        }
        // --json: the shared events, after this report's own (decoded, bitrate) for the same moment.
        if let json { try json.receive(event) }
        // What a recording would correct its cuts by: once, after the first head.
        if case .head = event, let status = titleDelay.withLock({ status in defer { status = nil }; return status }) {
            if let jsonWriter { jsonWriter.emit(status.event(station: station)) } else { report(["delay     \(status.text)"]) }
        }
    }

    /// Decodes the sampled packets once with the stream's decoder and reports what it makes of
    /// them: for AAC the profile (LC, HE-AAC, HE-AAC v2) and core and output rates.
    private func reportDecoded(_ sample: DecodeSample) {
        guard let codec = sample.codec, let decoder = try? AudioDecoders.make(for: codec) else { return }
        for packet in sample.packets { try? decoder.decode(packet) { _, _ in } }
        guard let format = decoder.format else { return }
        let profile = (decoder as? AACDecoder)?.lastFrame?.profile.rawValue ?? codec.rawValue
        let channels = format.channels == 1 ? "mono" : format.channels == 2 ? "stereo" : "\(format.channels) channels"
        let rates = format.sampleRate == sample.coreSampleRate
            ? "\(format.sampleRate) Hz" : "core \(sample.coreSampleRate) Hz, output \(format.sampleRate) Hz"
        if let jsonWriter {
            jsonWriter.emit(MachineEvent("decoded", [
                ("station", .string(station.id)), ("profile", .string(profile)),
                ("core_sample_rate_hz", .int(sample.coreSampleRate)), ("sample_rate_hz", .int(format.sampleRate)),
                ("channels", .int(format.channels)),
            ]))
        } else {
            report(["decoded   \(profile), \(rates), \(channels)"])
        }
    }


    /// One line of its own (text), or a `note` event (JSON).
    package func say(_ line: String) {
        if let jsonWriter {
            jsonWriter.emit(MachineEvent("note", [("station", .string(station.id)), ("text", .string(line))]))
        } else {
            report([line])
        }
    }

    private func report(_ lines: [String]) {
        // Station text (titles, head fields, the reason phrase) made inert; --json goes through
        // the machine events, whose JSON encoder escapes the real value itself.
        for line in lines { write(InertText.render(line)) }
    }

    private func headLines(_ head: StreamHead) -> [String] {
        let response = head.response
        let status = station.localStream.map { "read from \($0.displayName)" }
            ?? "\(response.protocolName) \(response.statusCode) \(response.reason)"
        var lines = ["station   \(station.id) (\(head.url))", "status    \(status)"]
        let fields: [(String, String?)] = [
            ("name", response.icyName), ("genre", response.icyGenre), ("url", response.icyURL),
            ("about", response.icyDescription), ("bitrate", response.icyBitrate.map { "\($0) kbps" }),
            ("metaint", Self.describe(response.metaint)), ("public", response.isPublic.map { $0 ? "yes" : "no" }),
            ("type", response.contentType), ("server", response.server),
        ]
        for (label, value) in fields {
            if let value { lines.append(label.padded(toLength: 10) + value) }
        }
        if let hls = head.hls { lines += Self.describe(hls) }
        return lines
    }

    /// `hls       live, MPEG-TS, 6 s segments, 18 s behind the live edge, AES-128` and the variants.
    static func describe(_ hls: HLSStreamDescription) -> [String] {
        var summary = [hls.isLive ? "live" : "VOD", hls.container, "\(hls.targetDuration) s segments"]
        if hls.isLive { summary.append("\(hls.secondsBehindLiveEdge.formatted(decimals: 1)) s behind the live edge") }
        if hls.isEncrypted { summary.append("AES-128") }
        var lines = ["hls       " + summary.joined(separator: ", ")]
        for (index, variant) in hls.variants.enumerated() {
            let codecs = variant.codecs.isEmpty ? "" : " (\(variant.codecs.joined(separator: ",")))"
            let mark = index == hls.chosenVariant ? "  <- chosen" : ""
            lines.append("variant   \(variant.bandwidth / 1000) kbps\(codecs)\(mark)")
        }
        return lines
    }

    static func describe(_ header: AudioFrameHeader) -> String {
        let channels = header.channels == 1 ? "mono" : header.channels == 2 ? "stereo" : "\(header.channels) channels"
        // ADTS has no bitrate field: one frame's length says nothing about the stream (see "average").
        let nominal = if case .mpeg = header { header.bitrate } else { Int?.none }
        let bitrate = nominal.map { ", \($0 / 1000) kbps" } ?? ""
        return "\(header.codec.rawValue)\(bitrate), \(header.sampleRate) Hz, \(channels)"
    }

    static func describe(_ metaint: MetaintValue) -> String? {
        switch metaint {
        case .absent: nil
        case .interval(let bytes): "\(bytes) bytes"
        case .invalid(let value): "invalid (\(value)), titles ignored"
        }
    }

    static func clockText(_ seconds: Double) -> String {
        let tenths = Int((seconds * 10).rounded(.down))
        let hours = tenths / 36000, minutes = tenths / 600 % 60, secs = tenths / 10 % 60
        return "\(hours.zeroPadded(width: 2)):\(minutes.zeroPadded(width: 2)):\(secs.zeroPadded(width: 2)).\(tenths % 10)"
    }
}
