import AudioFingerprinting

/// How two fingerprints line up: `candidate[i + offset]` is `query[i]`'s audio.
struct FingerprintAlignment: Sendable, Hashable {
    let offset: Int
    /// Differing bits over all bits of the overlap: about 0.5 for unrelated audio, well under
    /// 0.2 for the same recording through two lossy encoders.
    let bitErrorRate: Double
    /// Values that overlap at this offset.
    let overlap: Int
}

/// Decides whether two fingerprints are the same recording, and picks the few library tracks
/// worth comparing through an inverted index of sampled fingerprint values (as AcoustID does),
/// so a lookup costs the same in a library of 100 tracks or 100,000.
///
/// A term is a value's top 20 bits (ten of Chromaprint's sixteen 2-bit classifiers: exact
/// matches survive re-encoding far more often than whole 32-bit values); only terms divisible
/// by `termSampling` are indexed, chosen by content, not position, so two recordings that
/// start seconds apart sample the same moments.
enum FingerprintMatcher {
    static let termShift: UInt32 = 12
    static let termSampling: UInt32 = 8
    /// The same recording: at most this share of bits differ over the overlap.
    static let maxBitErrorRate = 0.30
    /// Overlaps shorter than this (about 10 s) decide nothing: jingles and silences look alike.
    static let minimumOverlap = 80
    /// And the overlap covers at least this share of the shorter fingerprint.
    static let minimumOverlapShare = 0.5
    /// Offsets this close to the voted one are tried too (cuts fall between fingerprint items).
    static let offsetSlack = 2

    /// The indexed term of `value`, or nil when the sampling skips it.
    static func term(of value: UInt32) -> Int64? {
        let term = value >> termShift
        return term % termSampling == 0 ? Int64(term) : nil
    }

    /// The indexed (term, position) pairs of a fingerprint, each pair once.
    static func terms(of fingerprint: Fingerprint) -> [(term: Int64, position: Int)] {
        var seen = Set<Int64>()
        var terms: [(term: Int64, position: Int)] = []
        for (position, value) in fingerprint.values.enumerated() {
            guard let term = term(of: value) else { continue }
            // A term repeated within one track (a held chord, silence) votes once: its first place.
            if seen.insert(term).inserted { terms.append((term, position)) }
        }
        return terms
    }

    /// Bit error rate of `query[i]` against `candidate[i + offset]` over their overlap.
    static func compare(_ query: [UInt32], _ candidate: [UInt32], offset: Int) -> FingerprintAlignment {
        let start = max(0, -offset)
        let end = min(query.count, candidate.count - offset)
        guard end > start else { return FingerprintAlignment(offset: offset, bitErrorRate: 1, overlap: 0) }
        var differing = 0
        for index in start..<end {
            differing += (query[index] ^ candidate[index + offset]).nonzeroBitCount
        }
        let overlap = end - start
        return FingerprintAlignment(offset: offset, bitErrorRate: Double(differing) / Double(overlap * 32), overlap: overlap)
    }

    /// The best alignment near `offset`, when it says "the same recording".
    static func match(_ query: [UInt32], _ candidate: [UInt32], near offset: Int) -> FingerprintAlignment? {
        let needed = max(minimumOverlap, Int((Double(min(query.count, candidate.count)) * minimumOverlapShare).rounded(.up)))
        var best: FingerprintAlignment?
        for shift in (offset - offsetSlack)...(offset + offsetSlack) {
            let alignment = compare(query, candidate, offset: shift)
            guard alignment.overlap >= needed, alignment.bitErrorRate <= maxBitErrorRate else { continue }
            if best.map({ alignment.bitErrorRate < $0.bitErrorRate }) ?? true { best = alignment }
        }
        return best
    }

    /// Tracks and offsets in order of votes (most first), at least two votes each: the
    /// candidates worth a full comparison. `hits` are (track, candidate position, query position).
    static func candidates(from hits: [(track: Int64, position: Int, queryPosition: Int)], limit: Int) -> [(track: Int64, offset: Int)] {
        var votes: [TrackOffset: Int] = [:]
        for hit in hits {
            // Offsets a step apart are one alignment: both neighbours get the vote.
            let offset = hit.position - hit.queryPosition
            votes[TrackOffset(track: hit.track, offset: offset), default: 0] += 2
            votes[TrackOffset(track: hit.track, offset: offset - 1), default: 0] += 1
            votes[TrackOffset(track: hit.track, offset: offset + 1), default: 0] += 1
        }
        var bestPerTrack: [Int64: (offset: Int, votes: Int)] = [:]
        for (key, count) in votes where count >= 3 {
            if let best = bestPerTrack[key.track], best.votes >= count { continue }
            bestPerTrack[key.track] = (key.offset, count)
        }
        return bestPerTrack.sorted { $0.value.votes > $1.value.votes || ($0.value.votes == $1.value.votes && $0.key < $1.key) }
            .prefix(limit).map { (track: $0.key, offset: $0.value.offset) }
    }

    private struct TrackOffset: Hashable {
        let track: Int64
        let offset: Int
    }
}
