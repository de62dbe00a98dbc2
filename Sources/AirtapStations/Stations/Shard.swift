import AirtapSupport

/// One machine's share of a stations file: shard `index` of `count` (`--shard K/N`, K from 0,
/// as a Kubernetes StatefulSet numbers its pods).
///
/// Stations are assigned by rendezvous (highest-random-weight) hashing: every shard scores every
/// station and the highest score owns it. Each machine decides alone, from the station id and N,
/// with no coordinator and no shared state; going from N to N + 1 shards moves only the stations
/// the new shard now wins, about 1/(N + 1) of them, and none between the old shards.
package struct Shard: Sendable, Hashable, CustomStringConvertible {
    package let index: Int
    package let count: Int

    /// The most shards one fleet can have: scoring is per shard, so this bounds the work per station.
    package static let maximumCount = 10_000

    package init?(index: Int, count: Int) {
        guard count >= 1, count <= Self.maximumCount, index >= 0, index < count else { return nil }
        self.index = index
        self.count = count
    }

    /// `K/N`, K in 0..<N.
    package init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else { return nil }
        self.init(index: index, count: count)
    }

    package var description: String { "\(index)/\(count)" }

    /// Whether this shard records the station.
    package func owns(_ stationID: String) -> Bool {
        Self.owner(of: stationID, among: count) == index
    }

    /// The shard, of `count`, that owns the station.
    package static func owner(of stationID: String, among count: Int) -> Int {
        let key = StableHash.fnv1a(stationID)
        var best = 0
        var bestScore: UInt64 = 0
        for shard in 0..<max(count, 1) {
            let score = mix(key ^ mix(UInt64(shard) &+ 0x9E37_79B9_7F4A_7C15))
            if shard == 0 || score > bestScore {
                best = shard
                bestScore = score
            }
        }
        return best
    }

    /// SplitMix64's finaliser: spreads FNV's weak low bits over the whole word.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
