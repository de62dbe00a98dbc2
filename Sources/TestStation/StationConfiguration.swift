/// Everything that shapes the synthetic station. Every field has a default, so tests set only
/// what they check.
public struct StationConfiguration: Sendable, Hashable {
    /// How fast audio leaves the station.
    public enum Pace: String, Sendable, Hashable, CaseIterable {
        /// At the nominal bitrate, like a real broadcast.
        case realtime
        /// As fast as each client reads (still bounded by the socket's back-pressure).
        case fast
    }

    /// The status line of a stream response.
    public enum Style: String, Sendable, Hashable, CaseIterable {
        /// `HTTP/1.0 200 OK` (Icecast and SHOUTcast v2).
        case http10
        /// `ICY 200 OK` (SHOUTcast v1), which plain HTTP clients reject.
        case shoutcastV1
    }

    public static let defaultTitles = [
        "Airtap Test Tones - A440",
        "Airtap Test Tones - C#554",
        "Ünïcödé Tönes – Sœur's Song; Part=2",
        "Airtap Test Tones - A880 & Friends",
    ]

    /// The station only ever listens on loopback.
    public var host: String { "127.0.0.1" }
    /// 0 asks the system for a free port; `TestStationServer.port` tells which.
    public var port: Int
    /// Audio bytes between metadata blocks, for clients that ask for metadata.
    public var metaint: Int
    /// Kilobits per second (CBR).
    public var bitrate: Int
    public var sampleRate: Int
    public var channels: Int
    /// Length of the tone in each track.
    public var trackSeconds: Double
    /// Digital silence appended to each track.
    public var gapSeconds: Double
    /// Track `i`'s gap when `i` is below the count; later tracks get `gapSeconds`. Places
    /// boundaries with and without silence in one loop.
    public var gapSecondsPerTrack: [Double]?
    /// Each tone fades linearly to nothing over its last this-many seconds (a DJ's fade-out),
    /// before its gap. 0: the short click-free edge of `ToneGenerator` only.
    public var fadeOutSeconds: Double
    /// A stretch of every tone played quietly (not silent), to tempt a silence search.
    public var quietPassage: QuietPassage?
    /// When titles are announced relative to the true track boundary: negative = early, positive
    /// = late. A title goes out in the first metadata block at or after `boundary + offset`.
    public var metaOffsetSeconds: Double
    public var pace: Pace
    public var style: Style
    /// One track per title, in loop order.
    public var titles: [String]
    /// When set, each connection ends cleanly after this much audio, on a frame boundary.
    public var maxSeconds: Double?
    public var name: String
    public var genre: String
    /// Sent as `icy-url` and as `StreamUrl` in metadata.
    public var stationURL: String
    public var description: String
    /// Realtime only: a new client joins at the live position of a clock shared by all clients
    /// (frame-aligned), as with a real broadcast. Otherwise every client starts at offset 0,
    /// so a test knows exactly what it was sent.
    public var startAtLive: Bool
    /// Realtime only: the station stops sending for a while at one point of every connection,
    /// then goes on at the nominal rate (a player's buffer runs dry; nothing is lost).
    public var stall: Stall? = nil

    public struct Stall: Sendable, Hashable {
        /// Seconds of audio sent before the pause, and the pause's length.
        public var afterSeconds: Double
        public var seconds: Double

        public init(afterSeconds: Double, seconds: Double) {
            self.afterSeconds = afterSeconds
            self.seconds = seconds
        }
    }
    /// LAME quality 0...9; the default favours start-up time over fidelity.
    public var encoderQuality: Int
    /// What the tones are encoded as: MP3 with LAME, AAC LC in ADTS with ffmpeg's `aac` encoder,
    /// or chained Ogg Vorbis/Opus (a link per title) with ffmpeg.
    public var codec: StationCodec = .mp3

    public typealias Codec = StationCodec

    public init(
        port: Int = 0,
        metaint: Int = 16000,
        bitrate: Int = 128,
        sampleRate: Int = 44100,
        channels: Int = 2,
        trackSeconds: Double = 10,
        gapSeconds: Double = 0,
        gapSecondsPerTrack: [Double]? = nil,
        fadeOutSeconds: Double = 0,
        quietPassage: QuietPassage? = nil,
        metaOffsetSeconds: Double = 0,
        pace: Pace = .realtime,
        style: Style = .http10,
        titles: [String] = StationConfiguration.defaultTitles,
        maxSeconds: Double? = nil,
        name: String = "Airtap Test Station",
        genre: String = "Test Tones",
        stationURL: String = "http://127.0.0.1/airtap-teststation",
        description: String = "Sine tones for testing airtap",
        startAtLive: Bool = false,
        encoderQuality: Int = 7
    ) {
        self.port = port
        self.metaint = metaint
        self.bitrate = bitrate
        self.sampleRate = sampleRate
        self.channels = channels
        self.trackSeconds = trackSeconds
        self.gapSeconds = gapSeconds
        self.gapSecondsPerTrack = gapSecondsPerTrack
        self.fadeOutSeconds = fadeOutSeconds
        self.quietPassage = quietPassage
        self.metaOffsetSeconds = metaOffsetSeconds
        self.pace = pace
        self.style = style
        self.titles = titles
        self.maxSeconds = maxSeconds
        self.name = name
        self.genre = genre
        self.stationURL = stationURL
        self.description = description
        self.startAtLive = startAtLive
        self.encoderQuality = encoderQuality
    }

    /// Nominal audio bytes per second.
    public var bytesPerSecond: Int { bitrate * 1000 / 8 }

    /// Track `index`'s gap of digital silence.
    public func gapSeconds(ofTrack index: Int) -> Double {
        guard let gapSecondsPerTrack, index < gapSecondsPerTrack.count else { return gapSeconds }
        return gapSecondsPerTrack[index]
    }

    /// `metaOffsetSeconds` in audio bytes (CBR: the nominal rate is exact to a byte per second).
    public var metaOffsetBytes: Int { Int((metaOffsetSeconds * Double(bytesPerSecond)).rounded()) }

    /// A quiet stretch inside every tone: `seconds` long from `startSeconds` into the tone, at an
    /// RMS level of `levelDBFS` (a sine's RMS is 3 dB under its peak).
    public struct QuietPassage: Sendable, Hashable {
        public var startSeconds: Double
        public var seconds: Double
        public var levelDBFS: Double

        public init(startSeconds: Double, seconds: Double, levelDBFS: Double) {
            self.startSeconds = startSeconds
            self.seconds = seconds
            self.levelDBFS = levelDBFS
        }
    }

    /// Rejects values the station cannot honour, with a one-line reason.
    public func validate() throws(StationError) {
        guard (0...65535).contains(port) else { throw .invalidConfiguration("port must be 0...65535") }
        // 16 bits is what clients commonly accept; 0 would mean a block before every byte.
        guard (1...65535).contains(metaint) else { throw .invalidConfiguration("metaint must be 1...65535") }
        guard trackSeconds > 0, trackSeconds.isFinite else {
            throw .invalidConfiguration("track seconds must be positive")
        }
        guard gapSeconds >= 0, gapSeconds.isFinite else {
            throw .invalidConfiguration("gap seconds must not be negative")
        }
        for gap in gapSecondsPerTrack ?? [] where !(gap >= 0 && gap.isFinite) {
            throw .invalidConfiguration("gap seconds must not be negative")
        }
        guard fadeOutSeconds >= 0, fadeOutSeconds <= trackSeconds else {
            throw .invalidConfiguration("fade-out must be 0...track seconds")
        }
        if let quiet = quietPassage {
            guard quiet.startSeconds >= 0, quiet.seconds > 0, quiet.startSeconds + quiet.seconds <= trackSeconds else {
                throw .invalidConfiguration("the quiet passage must lie inside the tone")
            }
            guard quiet.levelDBFS <= 0, quiet.levelDBFS >= -120 else {
                throw .invalidConfiguration("the quiet passage's level must be -120...0 dBFS")
            }
        }
        // An hour either way is far past any real station's error, and keeps the byte count small.
        guard metaOffsetSeconds.isFinite, abs(metaOffsetSeconds) <= 3600 else {
            throw .invalidConfiguration("meta offset must be within an hour")
        }
        if let maxSeconds { guard maxSeconds > 0, maxSeconds.isFinite else {
            throw .invalidConfiguration("max seconds must be positive")
        } }
        guard !titles.isEmpty else { throw .invalidConfiguration("at least one title is needed") }
    }
}

/// Why the station could not start. One line each.
public enum StationError: Error, Sendable, Hashable, CustomStringConvertible {
    case invalidConfiguration(String)
    case encoding(String)

    public var description: String {
        switch self {
        case let .invalidConfiguration(reason): "invalid station configuration: \(reason)"
        case let .encoding(reason): "cannot encode the station's tracks: \(reason)"
        }
    }
}

extension Optional where Wrapped == StationConfiguration.Stall {
    /// Audio bytes due after `due` bytes' worth of time, with the pause taken out.
    func dueBytes(_ due: Int, bytesPerSecond: Int) -> Int {
        guard let stall = self else { return due }
        let start = Int(stall.afterSeconds * Double(bytesPerSecond))
        let length = Int(stall.seconds * Double(bytesPerSecond))
        return due <= start ? due : max(start, due - length)
    }
}

/// What the test station's tones are encoded as.
public enum StationCodec: String, Sendable, Hashable, CaseIterable {
    case mp3, aac, vorbis, opus

    public var isOgg: Bool { self == .vorbis || self == .opus }

    public var contentType: String {
        switch self {
        case .mp3: "audio/mpeg"
        case .aac: "audio/aac"
        case .vorbis, .opus: "audio/ogg"
        }
    }
}
