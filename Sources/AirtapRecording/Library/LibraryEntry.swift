import AudioFingerprinting
import FoundationEssentials

/// One kept track in the library index.
package struct LibraryEntry: Sendable, Hashable, Encodable {
    package var id: Int64 = 0
    package var path: String
    package var stationID: String?
    package var stationName: String?
    package var title: String?
    package var artist: String?
    /// When the track began (UTC).
    package var startedAt: Date
    package var seconds: Double
    package var codec: String?
    /// Bits per second of the first frame (nil when unknown, as for Ogg).
    package var bitrate: Int?
    /// False for a partial track (in `incomplete/`).
    package var isComplete: Bool
    /// EBU R128 integrated loudness (LUFS), ReplayGain 2.0 track gain (dB) and sample peak:
    /// nil until something measures them.
    package var loudness: Double?
    package var gain: Double?
    package var peak: Double?
    /// The audio's fingerprint when the entry is being added; entries read from the index leave
    /// it there (a few kilobytes per track that only dedupe reads) and say only its length.
    package var fingerprint: Fingerprint?
    /// How many values the index's fingerprint of this entry holds (nil: none), read from the index.
    package var storedFingerprintValues: Int?
    /// When the entry joined the index (UTC), read from the index.
    package var addedAt: Date?

    package init(path: String, stationID: String? = nil, stationName: String? = nil, title: String? = nil, artist: String? = nil,
                 startedAt: Date, seconds: Double, codec: String? = nil, bitrate: Int? = nil, isComplete: Bool = true,
                 fingerprint: Fingerprint? = nil) {
        self.path = path
        self.stationID = stationID
        self.stationName = stationName
        self.title = title
        self.artist = artist
        self.startedAt = startedAt
        self.seconds = seconds
        self.codec = codec
        self.bitrate = bitrate
        self.isComplete = isComplete
        self.fingerprint = fingerprint
    }

    private enum CodingKeys: String, CodingKey {
        case id, path, title, artist, seconds, codec, bitrate, loudness, gain, peak
        case stationID = "station_id", stationName = "station_name", startedAt = "started_at", isComplete = "complete"
        case fingerprintValues = "fingerprint_values", addedAt = "added_at"
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(path, forKey: .path)
        try container.encode(stationID, forKey: .stationID)
        try container.encode(stationName, forKey: .stationName)
        try container.encode(title, forKey: .title)
        try container.encode(artist, forKey: .artist)
        try container.encode(Self.utcStamp(startedAt), forKey: .startedAt)
        try container.encode(seconds, forKey: .seconds)
        try container.encode(codec, forKey: .codec)
        try container.encode(bitrate, forKey: .bitrate)
        try container.encode(isComplete, forKey: .isComplete)
        try container.encode(loudness, forKey: .loudness)
        try container.encode(gain, forKey: .gain)
        try container.encode(peak, forKey: .peak)
        try container.encode(storedFingerprintValues ?? fingerprint.map(\.values.count), forKey: .fingerprintValues)
        try container.encode(addedAt.map(Self.utcStamp), forKey: .addedAt)
    }

    /// ISO 8601 in UTC, as stored: "2026-11-26T15:04:05Z".
    package static func utcStamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: .gmt))
    }

    package static func date(fromUTCStamp text: String) -> Date? {
        try? Date.ISO8601FormatStyle(timeZone: .gmt).parse(text)
    }

    /// "Artist - Title", or the title, or the file's name.
    package var displayTitle: String {
        switch (artist.flatMap { $0.isEmpty ? nil : $0 }, title.flatMap { $0.isEmpty ? nil : $0 }) {
        case let (artist?, title?): "\(artist) - \(title)"
        case let (nil, title?): title
        case let (artist?, nil): artist
        case (nil, nil): String(path.split(separator: "/").last ?? Substring(path))
        }
    }

    /// What `library search` looks in: "Artist - Title" (so either alone matches too), and the
    /// station, one per line (a query never spans two), folded for case in all of Unicode, which
    /// SQLite's own `lower()` and `LIKE` are not.
    var searchText: String {
        let track = [artist, title].compactMap { $0?.isEmpty == false ? $0 : nil }.joined(separator: " - ")
        return [track, stationName, stationID].compactMap { $0 }.joined(separator: "\n").lowercased()
    }
}
