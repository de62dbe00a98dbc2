import AirtapSupport
import FoundationEssentials
import ICYWire
import ID3Tagging
import RecordingRules

/// How a recorded file is named and tagged: the station, its title and when it began.
extension RecorderCore {
    func names(for info: TrackInfo?, startedAt: Date, sequence: Int) -> [String] {
        let stamp = Self.timestamp(startedAt)
        let fields = TrackNameFields(
            station: stationName, artist: info?.artist, title: info?.title ?? "",
            date: stamp.date, time: stamp.time, seq: sequence)
        return options.template.render(fields)
    }

    /// `replayGain`: known once the track is whole (the provisional tag has none).
    func tag(for open: OpenTrack, replayGain: ReplayGain? = nil) -> ID3TagContent {
        var text: [(id: String, text: String)] = []
        if let info = open.info {
            if !info.title.isEmpty { text.append((id: "TIT2", text: info.title)) }
            if let artist = info.artist, !artist.isEmpty { text.append((id: "TPE1", text: artist)) }
        }
        text.append((id: "TALB", text: stationName))
        if let genre = head?.icyGenre, !genre.isEmpty { text.append((id: "TCON", text: genre)) }
        text.append((id: "TRCK", text: "\(open.sequence)"))
        text.append((id: "TDRC", text: Self.recordingDate(open.startedAt)))
        text.append((id: "TSSE", text: "airtap \(AirtapVersion.current)"))
        var urls: [(id: String, url: String)] = []
        if let url = open.info?.url, url.hasPrefix("http://") || url.hasPrefix("https://") {
            urls.append((id: "WOAS", url: url))
        }
        let stationURL = head?.icyURL ?? station.urls.first.map(URLCredentials.redacted)
        let userText = (replayGain?.tagFields ?? []).map { (description: $0.key, text: $0.value) }
        return ID3TagContent(text: ID3TextFrames(text), urls: urls, comment: stationURL, userText: userText)
    }

    /// What Ogg files get instead of ID3 (title and artist are the link's own comments).
    func oggTags(sequence: Int, startedAt: Date) -> [VorbisComments.Field] {
        var fields = [VorbisComments.Field(key: "ALBUM", value: stationName)]
        if let genre = head?.icyGenre, !genre.isEmpty { fields.append(.init(key: "GENRE", value: genre)) }
        fields.append(.init(key: "TRACKNUMBER", value: "\(sequence)"))
        fields.append(.init(key: "DATE", value: Self.recordingDate(startedAt)))
        return fields
    }

    private static func timestamp(_ date: Date) -> (date: String, time: String) {
        let parts = WallClock.local.fields(of: date)
        let day = "\(parts.year.zeroPadded(width: 4))-\(parts.month.zeroPadded(width: 2))-\(parts.day.zeroPadded(width: 2))"
        let time = "\(parts.hour.zeroPadded(width: 2))-\(parts.minute.zeroPadded(width: 2))-\(parts.second.zeroPadded(width: 2))"
        return (day, time)
    }

    /// ID3v2.4 timestamp: yyyy-MM-ddTHH:mm:ss, local time.
    private static func recordingDate(_ date: Date) -> String {
        let stamp = timestamp(date)
        return stamp.date + "T" + stamp.time.replacingEvery("-", with: ":")
    }
}
