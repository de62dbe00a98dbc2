/// Everything that shapes the synthetic station. Every field has a default, so tests set only
/// what they check.
package struct StationConfiguration: Sendable, Hashable {
    /// How fast audio leaves the station.
    package enum Pace: String, Sendable, Hashable, CaseIterable {
        /// At the nominal bitrate, like a real broadcast.
        case realtime
        /// As fast as each client reads (still bounded by the socket's back-pressure).
        case fast
    }

    /// The status line of a stream response.
    package enum Style: String, Sendable, Hashable, CaseIterable {
        /// `HTTP/1.0 200 OK` (Icecast and SHOUTcast v2).
        case http10
        /// `ICY 200 OK` (SHOUTcast v1), which plain HTTP clients reject.
        case shoutcastV1
    }

    package static let defaultTitles = [
        "Airtap Test Tones - A440",
        "Airtap Test Tones - C#554",
        "Ünïcödé Tönes – Sœur's Song; Part=2",
        "Airtap Test Tones - A880 & Friends",
    ]

    /// The station only ever listens on loopback.
    package var host: String { "127.0.0.1" }
    /// 0 asks the system for a free port; `TestStationServer.port` tells which.
    package var port: Int
    /// Audio bytes between metadata blocks, for clients that ask for metadata.
    package var metaint: Int
    /// Kilobits per second (CBR).
    package var bitrate: Int
    package var sampleRate: Int
    package var channels: Int
    /// Length of the tone in each track.
    package var trackSeconds: Double
    /// Digital silence appended to each track.
    package var gapSeconds: Double
    /// Track `i`'s gap when `i` is below the count; later tracks get `gapSeconds`. Places
    /// boundaries with and without silence in one loop.
    package var gapSecondsPerTrack: [Double]?
    /// Each tone fades linearly to nothing over its last this-many seconds (a DJ's fade-out),
    /// before its gap. 0: the short click-free edge of `ToneGenerator` only.
    package var fadeOutSeconds: Double
    /// A stretch of every tone played quietly (not silent), to tempt a silence search.
    package var quietPassage: QuietPassage?
    /// When titles are announced relative to the true track boundary: negative = early, positive
    /// = late. A title goes out in the first metadata block at or after `boundary + offset`.
    package var metaOffsetSeconds: Double
    package var pace: Pace
    package var style: Style
    /// One track per title, in loop order.
    package var titles: [String]
    /// When set, each connection ends cleanly after this much audio, on a frame boundary.
    package var maxSeconds: Double?
    package var name: String
    package var genre: String
    /// Sent as `icy-url` and as `StreamUrl` in metadata.
    package var stationURL: String
    package var description: String
    /// Realtime only: a new client joins at the live position of a clock shared by all clients
    /// (frame-aligned), as with a real broadcast. Otherwise every client starts at offset 0,
    /// so a test knows exactly what it was sent.
    package var startAtLive: Bool
    /// Realtime only: the station stops sending for a while at one point of every connection,
    /// then goes on at the nominal rate (a player's buffer runs dry; nothing is lost).
    package var stall: Stall? = nil

    package struct Stall: Sendable, Hashable {
        /// Seconds of audio sent before the pause.
        package var afterSeconds: Double
        /// The pause's length; nil holds it until `TestStationServer.resumeStall()`, so a test can
        /// wait for what the pause causes instead of guessing how long that takes.
        package var seconds: Double?

        package init(afterSeconds: Double, seconds: Double) {
            self.afterSeconds = afterSeconds
            self.seconds = seconds
        }

        /// Held until `TestStationServer.resumeStall()`.
        var isHeld: Bool { seconds == nil }

        package static func untilResumed(afterSeconds: Double) -> Stall {
            var stall = Stall(afterSeconds: afterSeconds, seconds: 0)
            stall.seconds = nil
            return stall
        }
    }
    /// Every title goes out as bytes that break naive parsers (see `HostileTitle`): NUL, C0 and
    /// C1 controls, ESC sequences, broken UTF-8, `';` inside the value, and one title filling
    /// the 4080 bytes a block can hold.
    package var hostileTitles = false
    /// LAME quality 0...9; the default favours start-up time over fidelity.
    package var encoderQuality: Int
    /// What the tones are encoded as: MP3 with LAME, AAC LC in ADTS with ffmpeg's `aac` encoder,
    /// or chained Ogg Vorbis/Opus (a link per title) with ffmpeg.
    package var codec: StationCodec = .mp3
    /// Ogg only: each track goes out as links of this many seconds (its first stretch, sent again
    /// and again as new links), a hostile station starting a new chained link every few pages.
    /// nil: one link per track.
    package var oggLinkSeconds: Double? = nil
    /// Ogg only: every link goes out beside an Ogg Skeleton stream (fishead, fisbone and EOS pages
    /// among its header pages), as oggz and ffmpeg2theora write it.
    package var oggSkeleton = false

    package typealias Codec = StationCodec

    package init(
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
    package var bytesPerSecond: Int { bitrate * 1000 / 8 }

    /// Track `index`'s gap of digital silence.
    package func gapSeconds(ofTrack index: Int) -> Double {
        guard let gapSecondsPerTrack, index < gapSecondsPerTrack.count else { return gapSeconds }
        return gapSecondsPerTrack[index]
    }

    /// `metaOffsetSeconds` in audio bytes (CBR: the nominal rate is exact to a byte per second).
    package var metaOffsetBytes: Int { Int((metaOffsetSeconds * Double(bytesPerSecond)).rounded()) }

    /// A quiet stretch inside every tone: `seconds` long from `startSeconds` into the tone, at an
    /// RMS level of `levelDBFS` (a sine's RMS is 3 dB under its peak).
    package struct QuietPassage: Sendable, Hashable {
        package var startSeconds: Double
        package var seconds: Double
        package var levelDBFS: Double

        package init(startSeconds: Double, seconds: Double, levelDBFS: Double) {
            self.startSeconds = startSeconds
            self.seconds = seconds
            self.levelDBFS = levelDBFS
        }
    }

    /// Rejects values the station cannot honour, with a one-line reason.
    package func validate() throws(StationError) {
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
        if let oggLinkSeconds { guard oggLinkSeconds >= 0.05, oggLinkSeconds <= trackSeconds else {
            throw .invalidConfiguration("Ogg link seconds must be 0.05...track seconds")
        } }
    }
}

/// Why the station could not start. One line each.
package enum StationError: Error, Sendable, Hashable, CustomStringConvertible {
    case invalidConfiguration(String)
    case encoding(String)

    package var description: String {
        switch self {
        case let .invalidConfiguration(reason): "invalid station configuration: \(reason)"
        case let .encoding(reason): "cannot encode the station's tracks: \(reason)"
        }
    }
}

extension Optional where Wrapped == StationConfiguration.Stall {
    /// Audio bytes due after `due` bytes' worth of time, with the pause taken out. A pause held
    /// until resumed lasts until `resumedAfter` bytes' worth of time (nil: not resumed yet).
    func dueBytes(_ due: Int, bytesPerSecond: Int, resumedAfter: Int?) -> Int {
        guard let stall = self else { return due }
        let start = Int(stall.afterSeconds * Double(bytesPerSecond))
        guard due > start else { return due }
        let length: Int
        if let seconds = stall.seconds {
            length = Int(seconds * Double(bytesPerSecond))
        } else if let resumedAfter {
            length = max(0, resumedAfter - start)
        } else {
            return start
        }
        return max(start, due - length)
    }
}

/// What the test station's tones are encoded as.
package enum StationCodec: String, Sendable, Hashable, CaseIterable {
    case mp3, aac, vorbis, opus

    package var isOgg: Bool { self == .vorbis || self == .opus }

    package var contentType: String {
        switch self {
        case .mp3: "audio/mpeg"
        case .aac: "audio/aac"
        case .vorbis, .opus: "audio/ogg"
        }
    }
}
