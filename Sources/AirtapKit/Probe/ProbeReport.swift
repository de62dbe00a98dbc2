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
    /// Stream time so far, for the time of each title.
    private let position = Locked((samples: 0, sampleRate: 0))

    /// With `.json`, the shared `--json` schema (`MachineEvent`), as record, play and serve print it.
    private let json: MachineEventSink?

    public init(station: Station, style: Style, write: @escaping @Sendable (String) -> Void) {
        self.station = station
        self.style = style
        self.write = write
        json = style == .json ? MachineEventSink(station: station, writer: MachineEventWriter(write: write)) : nil
    }

    public func receive(_ event: StreamEvent) throws {
        if let json { return try json.receive(event) }
        switch event {
        case .head(let head):
            report(headLines(head))
        case .format(let header):
            position.withLock { $0.sampleRate = header.sampleRate }
            report(["codec     \(Self.describe(header))"])
        case .packet(let packet):
            position.withLock { $0.samples += packet.sampleCount }
        case .metadata(let change):
            let streamTime = position.withLock { $0.sampleRate > 0 ? Double($0.samples) / Double($0.sampleRate) : 0 }
            let text = "[\(Self.clockText(streamTime))] title: \(change.info.raw.isEmpty ? "(empty)" : change.info.raw)"
            report([text])
        case .discontinuity(let position):
            report(["discontinuity at byte \(position)"])
        case .ended(let reason):
            report(["ended     \(reason)"])
        }
    }

    private func report(_ lines: [String]) {
        // Station text (titles, head fields, the reason phrase) made inert; --json goes through
        // the machine events, whose JSON encoder escapes the real value itself.
        for line in lines { write(InertText.render(line)) }
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
