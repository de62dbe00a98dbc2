import AACDecoding
import AudioDecoding
import FoundationEssentials
import ICYWire
import Locking

/// `airtap probe`: prints what a stream is and each title change, as text or JSON lines.
///
/// Runs behind a `QueuedSink`, so printing never holds up the ingest thread.
public final class ProbeReport: StreamSink {
    public enum Style: Sendable { case text, json }

    private let style: Style
    private let station: Station
    private let write: @Sendable (String) -> Void
    private let clock = ContinuousClock.now
    /// Stream time so far, for the time of each title.
    private let position = Locked((samples: 0, sampleRate: 0))
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

    public init(station: Station, style: Style, write: @escaping @Sendable (String) -> Void) {
        self.station = station
        self.style = style
        self.write = write
    }

    public func receive(_ event: StreamEvent) throws {
        switch event {
        case .head(let head):
            report(headLines(head), json: HeadRecord(head, station: station))
        case .format(let header):
            position.withLock { $0.sampleRate = header.sampleRate }
            report(["codec     \(Self.describe(header))"], json: FormatRecord(header))
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
            report([text], json: TitleRecord(change, streamTime: streamTime))
        case .discontinuity(let position):
            report(["discontinuity at byte \(position)"], json: DiscontinuityRecord(position: position))
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
                report(["average   \(kbps) kbps over \(tenths / 10).\(tenths % 10) s of audio"],
                       json: BitrateRecord(averageKbps: kbps, audioSeconds: (seconds * 10).rounded() / 10))
            }
            let elapsed = (ContinuousClock.now - clock).seconds
            report(["ended     \(reason)"], json: EndRecord(reason: reason, seconds: elapsed))
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
        report(["decoded   \(profile), \(rates), \(channels)"],
               json: DecodedRecord(profile: profile, coreSampleRate: sample.coreSampleRate,
                                   sampleRate: format.sampleRate, channels: format.channels))
    }

    private func report(_ lines: [String], json: some Encodable) {
        switch style {
        case .text:
            for line in lines { write(line) }
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if let data = try? encoder.encode(json) { write(String(decoding: data, as: UTF8.self)) }
        }
    }

    private func headLines(_ head: StreamHead) -> [String] {
        let response = head.response
        var lines = ["station   \(station.id) (\(head.url))",
                     "status    \(response.protocolName) \(response.statusCode) \(response.reason)"]
        let fields: [(String, String?)] = [
            ("name", response.icyName), ("genre", response.icyGenre), ("url", response.icyURL),
            ("about", response.icyDescription), ("bitrate", response.icyBitrate.map { "\($0) kbps" }),
            ("metaint", Self.describe(response.metaint)), ("public", response.isPublic.map { $0 ? "yes" : "no" }),
            ("type", response.contentType), ("server", response.server),
        ]
        for (label, value) in fields {
            if let value { lines.append(label.padded(toLength: 10) + value) }
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

// MARK: JSON lines

private struct HeadRecord: Encodable {
    let event = "head"
    let station: String, url: String, protocolName: String, status: Int, reason: String
    let name: String?, genre: String?, stationURL: String?, description: String?, bitrate: Int?
    let metaint: Int?, contentType: String?, server: String?, isPublic: Bool?

    init(_ head: StreamHead, station: Station) {
        let response = head.response
        self.station = station.id
        url = head.url
        protocolName = response.protocolName
        status = response.statusCode
        reason = response.reason
        name = response.icyName
        genre = response.icyGenre
        stationURL = response.icyURL
        description = response.icyDescription
        bitrate = response.icyBitrate
        if case .interval(let bytes) = response.metaint { metaint = bytes } else { metaint = nil }
        contentType = response.contentType
        server = response.server
        isPublic = response.isPublic
    }

    enum CodingKeys: String, CodingKey {
        case event, station, url, status, reason, name, genre, description, bitrate, metaint, server
        case protocolName = "protocol", stationURL = "icyURL", contentType = "contentType", isPublic = "public"
    }
}

private struct FormatRecord: Encodable {
    let event = "format"
    let codec: String, bitrate: Int?, sampleRate: Int, channels: Int

    init(_ header: AudioFrameHeader) {
        codec = header.codec.rawValue
        bitrate = header.bitrate
        sampleRate = header.sampleRate
        channels = header.channels
    }
}

private struct TitleRecord: Encodable {
    let event = "title"
    let raw: String, artist: String?, title: String, url: String?, position: Int, source: String, streamTime: Double

    init(_ change: TrackChange, streamTime: Double) {
        raw = change.info.raw
        artist = change.info.artist
        title = change.info.title
        url = change.info.url
        position = change.position
        source = change.source.rawValue
        self.streamTime = (streamTime * 1000).rounded() / 1000
    }
}

private struct DecodedRecord: Encodable {
    let event = "decoded"
    let profile: String, coreSampleRate: Int, sampleRate: Int, channels: Int
}

private struct BitrateRecord: Encodable {
    let event = "bitrate"
    let averageKbps: Int, audioSeconds: Double
}

private struct DiscontinuityRecord: Encodable {
    let event = "discontinuity"
    let position: Int
}

private struct EndRecord: Encodable {
    let event = "ended"
    let reason: String, error: String?, seconds: Double

    init(reason: StopReason, seconds: Double) {
        switch reason {
        case .endOfStream: self.reason = "endOfStream"; error = nil
        case .userRequest: self.reason = "userRequest"; error = nil
        case .limitReached: self.reason = "limitReached"; error = nil
        case .error(let failure): self.reason = "error"; error = failure.description
        }
        self.seconds = (seconds * 10).rounded() / 10
    }
}
