import ICYWire

/// The cue sheet beside a `--single` recording: one TRACK per title, each with the CD frame
/// (1/75 s) its audio starts at.
package struct CueSheet: Sendable, Hashable {
    package struct Track: Sendable, Hashable {
        package var performer: String?
        package var title: String
        /// Where the track starts in the audio file, in samples per channel from its start.
        package var startSample: Int

        package init(performer: String?, title: String, startSample: Int) {
            self.performer = performer
            self.title = title
            self.startSample = startSample
        }
    }

    /// The FILE line's file type. The cue format names only BINARY, MOTOROLA, AIFF, WAVE and MP3;
    /// players (foobar2000, VLC, cuetools, ffmpeg-based splitters) read WAVE as "any audio file,
    /// decoded by its content", so every codec that is not MPEG audio says WAVE.
    package enum FileType: String, Sendable, Hashable {
        case mp3 = "MP3", wave = "WAVE"

        package init(_ codec: AudioCodec) {
            switch codec {
            case .mp3, .mp2, .mp1: self = .mp3
            default: self = .wave
            }
        }
    }

    /// The audio file's name relative to the cue sheet, which sits beside it.
    package var audioFileName: String
    package var fileType: FileType = .mp3
    /// The station.
    package var performer: String?
    package var title: String?
    package var sampleRate: Int
    /// In file order.
    package var tracks: [Track]

    package init(audioFileName: String, fileType: FileType = .mp3, performer: String?, title: String?, sampleRate: Int, tracks: [Track]) {
        self.audioFileName = audioFileName
        self.fileType = fileType
        self.performer = performer
        self.title = title
        self.sampleRate = sampleRate
        self.tracks = tracks
    }

    /// The sheet as UTF-8 text without a byte-order mark.
    ///
    /// Lines end in LF, not the CRLF of CD-ripping tools: the file is made on and mostly read by
    /// Linux tools (ffmpeg, cuetools, shntool, foobar2000 and VLC read either), and LF keeps it
    /// usable with grep, diff and sed. Track numbers go past 99 in long recordings although the
    /// CD format stops there; the common readers accept three digits.
    package func render() -> String {
        var lines: [String] = []
        if let performer { lines.append("PERFORMER \(Self.quoted(performer))") }
        if let title { lines.append("TITLE \(Self.quoted(title))") }
        lines.append("FILE \(Self.quoted(audioFileName)) \(fileType.rawValue)")
        for (offset, track) in tracks.enumerated() {
            lines.append("  TRACK \(Self.twoDigits(offset + 1)) AUDIO")
            if let performer = track.performer { lines.append("    PERFORMER \(Self.quoted(performer))") }
            lines.append("    TITLE \(Self.quoted(track.title))")
            lines.append("    INDEX 01 \(Self.indexTime(samples: track.startSample, sampleRate: sampleRate))")
        }
        return lines.map { $0 + "\n" }.joined()
    }

    /// "mm:ss:ff": minutes (past 99 when the recording is that long), seconds and CD frames
    /// (75 per second), rounded down, so the index never points after the track's first sample.
    /// Negative samples or a sample rate below 1 give "00:00:00" rather than a trap.
    package static func indexTime(samples: Int, sampleRate: Int) -> String {
        guard samples > 0, sampleRate > 0 else { return "00:00:00" }
        let seconds = samples / sampleRate
        // remainder * 75 computed in double width: sampleRate comes from the caller, unchecked.
        let (frames, _) = sampleRate.dividingFullWidth((samples % sampleRate).multipliedFullWidth(by: 75))
        return "\(twoDigits(seconds / 60)):\(twoDigits(seconds % 60)):\(twoDigits(frames))"
    }

    /// Cue sheets have no escape for `"`: it becomes `”` (which keeps 12" mixes and quoted words
    /// readable), and a line break or other control character becomes a space, since it would
    /// otherwise end the value and start a command of the title's choosing.
    static func quoted(_ value: String) -> String {
        var text = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text.unicodeScalars.append("\u{201D}")
            case _ where scalar.properties.generalCategory == .control: text.unicodeScalars.append(" ")
            case "\u{2028}", "\u{2029}": text.unicodeScalars.append(" ")
            default: text.unicodeScalars.append(scalar)
            }
        }
        return "\"\(text)\""
    }

    private static func twoDigits(_ value: Int) -> String {
        value < 10 ? "0\(value)" : String(value)
    }
}
