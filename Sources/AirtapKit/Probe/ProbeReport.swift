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
        case .metadata(let change):
            let streamTime = position.withLock { $0.sampleRate > 0 ? Double($0.samples) / Double($0.sampleRate) : 0 }
            let text = "[\(Self.clockText(streamTime))] title: \(change.info.raw.isEmpty ? "(empty)" : change.info.raw)"
            report([text], json: TitleRecord(change, streamTime: streamTime))
        case .discontinuity(let position):
            report(["discontinuity at byte \(position)"], json: DiscontinuityRecord(position: position))
        case .ended(let reason):
            let elapsed = (ContinuousClock.now - clock).seconds
            report(["ended     \(reason)"], json: EndRecord(reason: reason, seconds: elapsed))
        }
    }

    private func report(_ lines: [String], json: some Encodable) {
        switch style {
        case .text:
            // Station text (titles, head fields, the reason phrase) made inert; the JSON
            // encoder escapes the real value itself.
            for line in lines { write(InertText.render(line)) }
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
        let bitrate = header.bitrate.map { ", \($0 / 1000) kbps" } ?? ""
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
