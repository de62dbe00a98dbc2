import DequeModule

/// The newest finished tracks, oldest first: a ring that never holds more than `limit`.
struct RecentTracks: Sequence {
    let limit: Int
    /// Reserved at `limit` once, so a full ring drops its oldest and appends without allocating.
    private var storage: Deque<RecordedTrack>

    init(limit: Int) {
        self.limit = Swift.max(1, limit)
        storage = Deque(minimumCapacity: self.limit)
    }

    var count: Int { storage.count }
    var isEmpty: Bool { storage.isEmpty }

    mutating func append(_ track: RecordedTrack) {
        if storage.count == limit { storage.removeFirst() }
        storage.append(track)
    }

    func makeIterator() -> Deque<RecordedTrack>.Iterator {
        storage.makeIterator()
    }
}
