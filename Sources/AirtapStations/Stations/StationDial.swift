/// The stations `play` can move through with Next and Previous (MPRIS, the `>` and `<` keys):
/// stations.json's, in its order, when `play` was given a station id; the one station alone when
/// it was given a URL or a playlist file. The ends do not wrap: the file's order is the dial's.
package struct StationDial: Sendable, Hashable {
    package let stations: [Station]
    package private(set) var index: Int

    /// A dial of one station: Next and Previous are not offered.
    package init(station: Station) {
        stations = [station]
        index = 0
    }

    /// `stations[index]` first; nil when `index` is not one of them.
    package init?(stations: [Station], index: Int) {
        guard stations.indices.contains(index) else { return nil }
        self.stations = stations
        self.index = index
    }

    package var current: Station { stations[index] }
    package var canGoNext: Bool { index + 1 < stations.count }
    package var canGoPrevious: Bool { index > 0 }

    /// Moves one station on (`forward`) or back; false, and nothing moved, at an end.
    package mutating func move(forward: Bool) -> Bool {
        guard forward ? canGoNext : canGoPrevious else { return false }
        index += forward ? 1 : -1
        return true
    }
}
