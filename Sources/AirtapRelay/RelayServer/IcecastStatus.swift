#if canImport(Glibc)
import Glibc
#endif
import AirtapIngest
import AirtapKit
import AirtapSupport
import FoundationEssentials
import ICYWire

/// `/status-json.xsl` in Icecast 2.4's `icestats` shape, so Icecast dashboards and monitoring
/// scripts read airtap unchanged. Like Icecast, `source` is one object when one mount is up and
/// an array when there are several, and an Ogg mount has the fields Icecast's Ogg reader gives
/// it (`subtype`, `audio_*`, `artist` apart from `title`) where an MP3 or AAC mount has ICY's.
enum IcecastStatus {
    struct Source: Sendable {
        var mount: String
        var listenURL: String
        var name: String
        var description: String?
        var genre: String?
        var url: String?
        var contentType: String
        var codec: AudioCodec?
        /// airtap's own: a mount served as MP3 (`--transcode`), and the codec the station sends.
        var transcodedFrom: AudioCodec? = nil
        var nowPlaying: NowPlaying?
        var listeners: Int
        var peakListeners: Int
        /// kbit/s, as `icy-br` says it.
        var bitrate: Int?
        /// bit/s: an Ogg link's nominal rate (Vorbis has one, Opus none).
        var nominalBitrate: Int?
        var sampleRate: Int?
        var channels: Int?
        var streamStart: Date?
        /// airtap's own: the upstream connection's state (Icecast has no upstream).
        var upstream: String
    }

    /// What a mount is playing, as Icecast shows it: an Ogg link's artist and title apart (as
    /// airtap reads them for its recordings too), an ICY StreamTitle whole (Icecast does not split
    /// it either).
    struct NowPlaying: Sendable, Hashable {
        var artist: String?
        var title: String

        init(artist: String?, title: String) {
            self.artist = artist
            self.title = title
        }

        /// One line for people: "Artist - Title" when they came apart.
        var text: String {
            artist.map { "\($0) - \(title)" } ?? title
        }

        init(_ change: TrackChange) {
            self = change.source.separatesArtist ? NowPlaying(artist: change.info.artist, title: change.info.title)
                                                 : NowPlaying(artist: nil, title: change.info.raw)
        }
    }

    /// Icecast names every Ogg mount's type `application/ogg`, whatever codec it carries.
    static let oggServerType = "application/ogg"

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
            case artist, audioInfo = "audio_info", bitrate, channels, genre, listenerPeak = "listener_peak", listeners
            case listenURL = "listenurl", samplerate, serverDescription = "server_description", serverName = "server_name"
            case serverType = "server_type", serverURL = "server_url", streamStart = "stream_start"
            case streamStartISO8601 = "stream_start_iso8601", subtype, title, dummy, upstream = "airtap_upstream"
            case transcodedFrom = "airtap_transcoded_from"
            case audioBitrate = "audio_bitrate", audioChannels = "audio_channels", audioSamplerate = "audio_samplerate"
            case iceBitrate = "ice-bitrate"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            if let codec = source.codec, codec.isChained {
                try encodeOggAudio(codec, into: &container)
            } else {
                try encodeICYAudio(into: &container)
            }
            // Icecast's own word when a source names no genre: the field is always there.
            try container.encode(source.genre ?? "various", forKey: .genre)
            try container.encode(source.peakListeners, forKey: .listenerPeak)
            try container.encode(source.listeners, forKey: .listeners)
            try container.encode(source.listenURL, forKey: .listenURL)
            try container.encode(source.description ?? source.name, forKey: .serverDescription)
            try container.encode(source.name, forKey: .serverName)
            try container.encodeIfPresent(source.url, forKey: .serverURL)
            if let start = source.streamStart {
                try container.encode(IcecastStatus.rfc1123(start), forKey: .streamStart)
                try container.encode(IcecastStatus.iso8601(start), forKey: .streamStartISO8601)
            }
            try container.encodeIfPresent(source.nowPlaying?.artist, forKey: .artist)
            try container.encodeIfPresent(source.nowPlaying?.title, forKey: .title)
            try container.encodeNil(forKey: .dummy)
            try container.encode(source.upstream, forKey: .upstream)
            try container.encodeIfPresent(source.transcodedFrom?.rawValue, forKey: .transcodedFrom)
        }

        /// What an ICY source tells Icecast in `ice-audio-info`, and the type it says it sends.
        private func encodeICYAudio(into container: inout KeyedEncodingContainer<CodingKeys>) throws {
            var info: [String] = []
            if let bitrate = source.bitrate { info.append("bitrate=\(bitrate)") }
            if let channels = source.channels { info.append("channels=\(channels)") }
            if let rate = source.sampleRate { info.append("samplerate=\(rate)") }
            if !info.isEmpty { try container.encode(info.joined(separator: ";"), forKey: .audioInfo) }
            try container.encodeIfPresent(source.bitrate, forKey: .bitrate)
            try container.encodeIfPresent(source.channels, forKey: .channels)
            try container.encodeIfPresent(source.sampleRate, forKey: .samplerate)
            try container.encode(source.contentType, forKey: .serverType)
        }

        /// What Icecast reads from an Ogg link's headers itself.
        private func encodeOggAudio(_ codec: AudioCodec, into container: inout KeyedEncodingContainer<CodingKeys>) throws {
            try container.encodeIfPresent(source.nominalBitrate, forKey: .audioBitrate)
            try container.encodeIfPresent(source.channels, forKey: .audioChannels)
            try container.encodeIfPresent(source.sampleRate, forKey: .audioSamplerate)
            try container.encodeIfPresent(source.nominalBitrate.map { $0 / 1000 } ?? source.bitrate, forKey: .iceBitrate)
            try container.encode(IcecastStatus.oggServerType, forKey: .serverType)
            try container.encode(codec.rawValue, forKey: .subtype)
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
