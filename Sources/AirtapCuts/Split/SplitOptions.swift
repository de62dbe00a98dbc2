import AirtapStations
import AirtapSupport

/// Where a recording cuts at a title change (`--split-*`, `--silence-*`).
///
/// Stations send the new StreamTitle near the track change, not at it. The cut starts from the
/// title's position P (moved by `offset`), then looks for silence in `[P - before, P + after]`:
/// the middle of the run of quiet frames nearest P wins; without one, the cut stays at P.
package struct SplitOptions: Sendable, Hashable {
    /// Seconds of audio searched before and after P.
    package var windowBefore: Double
    package var windowAfter: Double
    /// A frame is silent when its RMS level is below this (dBFS).
    package var silenceLevel: Double
    /// A silence must last at least this long (seconds) to be a gap between tracks.
    package var silenceLength: Double
    /// False: cut at P (moved by `offset`) without decoding anything.
    package var searchesSilence: Bool
    /// Seconds added to the title's position before anything else: positive for a station whose
    /// titles come early (the song changes after the title), negative for late titles.
    package var offset: Double
    /// Seconds of audio after the cut that the previous file gets too (appended at its end).
    package var paddingPrevious: Double
    /// Seconds of audio before the cut that the next file gets too (prepended at its start).
    package var paddingNext: Double
    /// The station's title delay: learned (the default), set by hand, or not used.
    package var titleDelay: TitleDelaySetting = .auto

    package init(windowBefore: Double = 3, windowAfter: Double = 3, silenceLevel: Double = -50,
                silenceLength: Double = 0.3, searchesSilence: Bool = true, offset: Double = 0,
                paddingPrevious: Double = 0, paddingNext: Double = 0) {
        self.windowBefore = windowBefore
        self.windowAfter = windowAfter
        self.silenceLevel = silenceLevel
        self.silenceLength = silenceLength
        self.searchesSilence = searchesSilence
        self.offset = offset
        self.paddingPrevious = paddingPrevious
        self.paddingNext = paddingNext
    }

    /// The defaults: a 3 s + 3 s window, silence under -50 dBFS for 300 ms, no offset or padding.
    package static let standard = SplitOptions()

    /// True when the aligner would pass every event through untouched (no reason to install it).
    /// Without the silence search nothing is learned, but a delay set by hand still moves cuts.
    package var isPassThrough: Bool {
        let fixedDelay = if case .fixed = titleDelay { true } else { false }
        return !searchesSilence && !fixedDelay && offset == 0 && paddingPrevious == 0 && paddingNext == 0
    }

    /// The delay set by hand, if any.
    package var fixedTitleDelay: Double? {
        if case .fixed(let seconds) = titleDelay { seconds } else { nil }
    }

    /// True when the search learns the station's delay from what it finds.
    package var learnsTitleDelay: Bool { searchesSilence && titleDelay == .auto }

    /// Rejects values that make no sense; the limits keep the held audio (and memory) small.
    package func validate() throws(AirtapError) {
        for (name, value) in [("--split-window", windowBefore), ("--split-window", windowAfter)]
        where !(value >= 0 && value <= 30) {
            throw .usage("\(name): each side must be 0 to 30 seconds")
        }
        guard silenceLevel.isFinite, (-120...0).contains(silenceLevel) else {
            throw .usage("--silence-level must be -120 to 0 dBFS")
        }
        guard silenceLength > 0, silenceLength <= 30 else { throw .usage("--silence-length must be over 0 and at most 30 s") }
        guard offset.isFinite, abs(offset) <= 60 else { throw .usage("--split-offset must be within ±60000 ms") }
        if let delay = fixedTitleDelay, !(delay.isFinite && abs(delay) <= TitleDelayLearner.maximumDelay) {
            throw .usage("--title-delay must be within ±\(Int(TitleDelayLearner.maximumDelay)) seconds")
        }
        for value in [paddingPrevious, paddingNext] where !(value >= 0 && value <= 10) {
            throw .usage("--split-padding: each side must be 0 to 10000 ms")
        }
    }

    // MARK: Command-line forms

    /// `BEFORE:AFTER` as durations (`3:3`, `2.5:4`, `1500ms:3s`; bare numbers are seconds).
    package static func parseWindow(_ text: String) throws(AirtapError) -> (before: Double, after: Double) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let before = seconds(parts[0], bareUnit: 1), let after = seconds(parts[1], bareUnit: 1) else {
            throw .usage("--split-window takes BEFORE:AFTER, e.g. 3:3 or 1500ms:4s")
        }
        return (before, after)
    }

    /// `PREV:NEXT` in milliseconds (`500:0`; `s` and `ms` suffixes work too).
    package static func parsePadding(_ text: String) throws(AirtapError) -> (previous: Double, next: Double) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let previous = seconds(parts[0], bareUnit: 0.001), let next = seconds(parts[1], bareUnit: 0.001) else {
            throw .usage("--split-padding takes PREV:NEXT in milliseconds, e.g. 500:500")
        }
        return (previous, next)
    }

    /// A signed offset in milliseconds (`-1500`, `+800`, `2s`).
    package static func parseOffset(_ text: String) throws(AirtapError) -> Double {
        var body = Substring(text.trimmingSpaces())
        var sign = 1.0
        if let first = body.first, first == "-" || first == "+" {
            sign = first == "-" ? -1 : 1
            body = body.dropFirst()
        }
        guard let magnitude = seconds(body, bareUnit: 0.001) else {
            throw .usage("--split-offset takes milliseconds, e.g. -1500 for titles 1.5 s late")
        }
        return sign * magnitude
    }

    /// A non-negative amount with an optional `ms` or `s` suffix; bare numbers are in `bareUnit` seconds.
    private static func seconds(_ text: Substring, bareUnit: Double) -> Double? {
        let text = text.trimmingSpaces().lowercased()
        let (number, scale): (Substring, Double) =
            if text.hasSuffix("ms") { (text.dropLast(2), 0.001) }
            else if text.hasSuffix("s") { (text.dropLast(), 1) }
            else { (Substring(text), bareUnit) }
        guard let value = Double(number), value >= 0, value.isFinite else { return nil }
        return value * scale
    }
}
