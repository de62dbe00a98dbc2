#if canImport(Glibc)
import Glibc
#endif
import AirtapKit
import FoundationEssentials

/// `/status-json.xsl` in Icecast 2.4's `icestats` shape, so Icecast dashboards and monitoring
/// scripts read airtap unchanged. Like Icecast, `source` is one object when one mount is up and
/// an array when there are several.
enum IcecastStatus {
    struct Source: Sendable {
        var mount: String
        var listenURL: String
        var name: String
        var description: String?
        var genre: String?
        var url: String?
        var contentType: String
        var title: String?
        var listeners: Int
        var peakListeners: Int
        var bitrate: Int?
        var sampleRate: Int?
        var channels: Int?
        var streamStart: Date?
        /// airtap's own: the upstream connection's state (Icecast has no upstream).
        var upstream: String
    }

    private struct Document: Encodable {
        let icestats: Stats
    }

    private struct Stats: Encodable {
        let admin = "airtap@localhost"
        let host: String
        let location = "airtap"
        let serverID = AirtapVersion.userAgent
        let serverStart: String
        let serverStartISO8601: String
        let sources: [SourceEntry]

        enum CodingKeys: String, CodingKey {
            case admin, host, location, source
            case serverID = "server_id", serverStart = "server_start", serverStartISO8601 = "server_start_iso8601"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(admin, forKey: .admin)
            try container.encode(host, forKey: .host)
            try container.encode(location, forKey: .location)
            try container.encode(serverID, forKey: .serverID)
            try container.encode(serverStart, forKey: .serverStart)
            try container.encode(serverStartISO8601, forKey: .serverStartISO8601)
            if sources.count == 1 {
                try container.encode(sources[0], forKey: .source)
            } else if !sources.isEmpty {
                try container.encode(sources, forKey: .source)
            }
        }
    }

    private struct SourceEntry: Encodable {
        let source: Source

        enum CodingKeys: String, CodingKey {
            case audioInfo = "audio_info", bitrate, channels, genre, listenerPeak = "listener_peak", listeners
            case listenURL = "listenurl", samplerate, serverDescription = "server_description", serverName = "server_name"
            case serverType = "server_type", serverURL = "server_url", streamStart = "stream_start"
            case streamStartISO8601 = "stream_start_iso8601", title, dummy, upstream = "airtap_upstream"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            var info: [String] = []
            if let bitrate = source.bitrate { info.append("bitrate=\(bitrate)") }
            if let channels = source.channels { info.append("channels=\(channels)") }
            if let rate = source.sampleRate { info.append("samplerate=\(rate)") }
            if !info.isEmpty { try container.encode(info.joined(separator: ";"), forKey: .audioInfo) }
            try container.encodeIfPresent(source.bitrate, forKey: .bitrate)
            try container.encodeIfPresent(source.channels, forKey: .channels)
            try container.encodeIfPresent(source.sampleRate, forKey: .samplerate)
            try container.encodeIfPresent(source.genre, forKey: .genre)
            try container.encode(source.peakListeners, forKey: .listenerPeak)
            try container.encode(source.listeners, forKey: .listeners)
            try container.encode(source.listenURL, forKey: .listenURL)
            try container.encode(source.description ?? source.name, forKey: .serverDescription)
            try container.encode(source.name, forKey: .serverName)
            try container.encode(source.contentType, forKey: .serverType)
            try container.encodeIfPresent(source.url, forKey: .serverURL)
            if let start = source.streamStart {
                try container.encode(IcecastStatus.rfc1123(start), forKey: .streamStart)
                try container.encode(IcecastStatus.iso8601(start), forKey: .streamStartISO8601)
            }
            try container.encodeIfPresent(source.title, forKey: .title)
            try container.encodeNil(forKey: .dummy)
            try container.encode(source.upstream, forKey: .upstream)
        }
    }

    static func json(sources: [Source], serverStart: Date, host: String) -> String {
        let document = Document(icestats: Stats(host: host, serverStart: rfc1123(serverStart), serverStartISO8601: iso8601(serverStart),
                                                sources: sources.map(SourceEntry.init)))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(document) else { return "{}" }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// `Mon, 23 Nov 2026 21:00:00 +0000`, as Icecast writes its dates (UTC here).
    static func rfc1123(_ date: Date) -> String {
        let fields = utcFields(date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        return "\(days[Int(fields.tm_wday) % 7]), \(Int(fields.tm_mday).zeroPadded(width: 2)) \(months[Int(fields.tm_mon) % 12]) "
            + "\(Int(fields.tm_year) + 1900) \(clock(fields)) +0000"
    }

    /// `2026-11-23T21:00:00+0000`, Icecast's ISO 8601 form.
    static func iso8601(_ date: Date) -> String {
        let fields = utcFields(date)
        return "\(Int(fields.tm_year) + 1900)-\(Int(fields.tm_mon + 1).zeroPadded(width: 2))-\(Int(fields.tm_mday).zeroPadded(width: 2))"
            + "T\(clock(fields))+0000"
    }

    private static func clock(_ fields: tm) -> String {
        "\(Int(fields.tm_hour).zeroPadded(width: 2)):\(Int(fields.tm_min).zeroPadded(width: 2)):\(Int(fields.tm_sec).zeroPadded(width: 2))"
    }

    private static func utcFields(_ date: Date) -> tm {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var fields = tm()
        gmtime_r(&seconds, &fields)
        return fields
    }
}
