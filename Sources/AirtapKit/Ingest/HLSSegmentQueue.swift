import ICYWire

/// The segments still to fetch, oldest first. A VOD playlist hands out thousands at once:
/// taking one off the front moves a cursor, not the array (compacted now and then).
struct HLSSegmentQueue {
    private var segments: [HLSSegment] = []
    private var head = 0

    var count: Int { segments.count - head }
    var first: HLSSegment? { head < segments.count ? segments[head] : nil }

    mutating func append(_ more: [HLSSegment]) {
        segments.append(contentsOf: more)
    }

    mutating func dropFirst(_ count: Int) {
        head = min(segments.count, head + count)
        if head >= 1024, head * 2 >= segments.count {
            segments.removeFirst(head)
            head = 0
        }
    }

    func prefix(while belongs: (HLSSegment) -> Bool) -> ArraySlice<HLSSegment> {
        segments[head...].prefix(while: belongs)
    }
}
