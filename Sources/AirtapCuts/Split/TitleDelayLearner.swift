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
/// station sent by hand): the estimate is the median of the samples that agree (the largest group
/// of the recent samples that fit together within `agreementWidth` seconds), and it is used only
/// once at least `minimumAgreeing` of them agree and they are at least two thirds of the recent
/// samples (while only three agree, no other lies far off). On a station whose titles scatter the
/// samples seldom agree that well, and the recording behaves as without a delay.
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
    /// Samples that fit together within this many seconds agree. A title reaches a listener at
    /// the next metadata block after the station sends it, up to one metadata interval later (a
    /// second at 128 kbit/s with the usual 16000 bytes), and an encoder's buffer adds a few
    /// tenths either way: one steady station's samples spread over up to a second and a half,
    /// most of them over much less. A group anywhere in that spread counts, not only one centred
    /// on the median of all (three silences at 2.5, 2.5 and 3.3 s agree). Measured on simulated
    /// stations (`TitleDelayTests`): 95 % of steady ones learned at their third silence, about
    /// 1 % of title changes on scattered titles see a delay.
    package static let agreementWidth = 1.2
    /// How far from a delay resting on three samples another sample may lie and the delay stand:
    /// one steady station's samples spread over up to a second and a half.
    package static let steadyReach = 1.5
    /// A new group of samples further than this from the estimate is another delay (drift).
    package static let agreement = agreementWidth / 2
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
        // Three titles of a station whose titles scatter agree by chance now and then; the next
        // silence, anywhere else, says so. A steady station's next one lies near, if outside the
        // group: so a delay resting on only three is kept only while no sample lies far from it.
        if agreeing.count == Self.minimumAgreeing, samples.contains(where: { abs($0 - middle) > Self.steadyReach }) {
            return nil
        }
        let spread = agreeing.map { abs($0 - middle) }.max() ?? 0
        return TitleDelay(seconds: middle, spread: spread, boundaries: agreeing.count)
    }

    /// The largest group of samples that fit within `agreementWidth`, the tightest of equal ones;
    /// nil for none.
    private static func agreeing(_ samples: [Double]) -> [Double]? {
        let sorted = samples.sorted()
        var best: (range: ClosedRange<Int>, width: Double)?
        var last = 0
        for first in sorted.indices {
            last = max(last, first)
            while last + 1 < sorted.count, sorted[last + 1] - sorted[first] <= agreementWidth + 1e-9 { last += 1 }
            let width = sorted[last] - sorted[first]
            if let current = best, last - first < current.range.count - 1
                || (last - first == current.range.count - 1 && width >= current.width) { continue }
            best = (first...last, width)
        }
        return best.map { Array(sorted[$0.range]) }
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let half = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2
    }
}
