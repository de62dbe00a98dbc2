import DequeModule
import HLSWire
import ICYWire

/// The segments still to fetch, oldest first. A VOD playlist hands out thousands at once:
/// taking one off the front must not move the rest.
struct HLSSegmentQueue {
    private var segments = Deque<HLSSegment>()

    var count: Int { segments.count }
    var first: HLSSegment? { segments.first }

    mutating func append(_ more: [HLSSegment]) {
        segments.append(contentsOf: more)
    }

    mutating func dropFirst(_ count: Int) {
        segments.removeFirst(min(segments.count, max(0, count)))
    }

    func prefix(while belongs: (HLSSegment) -> Bool) -> Slice<Deque<HLSSegment>> {
        segments.prefix(while: belongs)
    }
}
