import AirtapStations

/// A station's title delay as far as it is known: seconds from the song change to its title's
/// arrival (negative when titles come before the song), and how far the boundaries it rests on
/// scatter around it.
package struct TitleDelay: Sendable, Hashable {
    package var seconds: Double
    /// The largest distance of an agreeing boundary from `seconds`: how far off a cut at the
    /// corrected position can be.
    package var spread: Double
    /// How many boundaries agree on it (0 when set by hand).
    package var boundaries: Int
}

/// Learns a station's title delay from boundaries the audio shows beyond doubt (the silences
/// the split search finds): each one is a sample, the title's arrival minus the silence's middle.
///
/// Pure: no clock, no I/O. Robust to outliers (a quiet passage taken for a gap, a title the
/// station sent by hand): the estimate is the median of the samples that agree, and it is used
/// only once at least `minimumAgreeing` of them agree within `agreement` seconds of their median
/// and they are at least two thirds of the recent samples. On a station whose titles scatter the
/// samples never agree that well, and the recording behaves as without a delay.
///
/// Follows drift (a station that changes its encoder): when the newest `driftSamples` agree with
/// each other and not with the estimate, the older samples are let go.
package struct TitleDelayLearner: Sendable, Hashable {
    /// The recent samples, oldest first; at most `capacity`.
    package private(set) var samples: [Double]

    /// Recent samples kept: enough to outvote two outliers, few enough to follow a change soon.
    package static let capacity = 9
    /// Three agreeing silences are enough: a real station may give no more in its first quarter
    /// hour. (The agreeing ones must also be two thirds of the recent samples.)
    package static let minimumAgreeing = 3
    /// Samples within this of their median agree. Three quarters of a second each side: a title
    /// reaches a listener at the next metadata block after the station sends it, up to one
    /// metadata interval later (a second at 128 kbit/s with the usual 16000 bytes), and an
    /// encoder's buffer adds a few tenths either way, so one steady station's samples spread over
    /// about a second and a half.
    package static let agreement = 0.75
    /// The newest samples that, agreeing with each other and not with the estimate, replace it.
    package static let driftSamples = 4
    /// Samples further off than this are not a title delay (and the audio held for a search
    /// would not reach them).
    package static let maximumDelay = TitleDelaySetting.maximumSeconds

    package init(samples: [Double] = []) {
        self.samples = Array(samples.filter { $0.isFinite && abs($0) <= Self.maximumDelay }.suffix(Self.capacity))
    }

    /// One boundary: seconds from where the audio shows the song changed to where its title arrived.
    package mutating func observe(_ sample: Double) {
        guard sample.isFinite, abs(sample) <= Self.maximumDelay else { return }
        let before = estimate
        samples.append(sample)
        if samples.count > Self.capacity { samples.removeFirst(samples.count - Self.capacity) }
        // Drift: the newest samples agree on another delay than the one in use.
        let newest = Array(samples.suffix(Self.driftSamples))
        if let before, newest.count == Self.driftSamples, samples.count > newest.count,
           let agreeing = Self.agreeing(newest), agreeing.count == newest.count,
           abs(Self.median(agreeing) - before.seconds) > Self.agreement {
            samples = newest
        }
    }

    /// The delay once the samples agree (see the type's comment); nil before, or on a station
    /// whose titles scatter.
    package var estimate: TitleDelay? {
        guard let agreeing = Self.agreeing(samples), agreeing.count >= Self.minimumAgreeing,
              agreeing.count * 3 >= samples.count * 2 else { return nil }
        let middle = Self.median(agreeing)
        let spread = agreeing.map { abs($0 - middle) }.max() ?? 0
        return TitleDelay(seconds: middle, spread: spread, boundaries: agreeing.count)
    }

    /// The samples within `agreement` of the median of all of them; nil for none.
    private static func agreeing(_ samples: [Double]) -> [Double]? {
        guard !samples.isEmpty else { return nil }
        let middle = median(samples)
        let agreeing = samples.filter { abs($0 - middle) <= agreement + 1e-9 }
        return agreeing.isEmpty ? nil : agreeing
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let half = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2
    }
}
