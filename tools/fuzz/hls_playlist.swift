// HLSPlaylist.parse on any text, then the variant choice or the tracker over the result.
// Input: [base and limits selector][text...]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHLSPlaylist(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.takeByte()
    let bases = ["http://127.0.0.1:8000/live/index.m3u8?x=1", "https://h", "relative/path", "x:"]
    let limits = selector & 0x80 != 0
        ? HLSPlaylistLimits(maxLines: 40, maxLineLength: 64, maxSegments: 8) : HLSPlaylistLimits()
    let base = bases[Int(selector & 0x7F) % bases.count]
    let text = input.rest

    do {
        switch try HLSPlaylist.parse(text, baseURL: base, limits: limits) {
        case .master(let master):
            require(!master.variants.isEmpty, "a master playlist without variants")
            require(master.chooseVariant() != nil, "no variant chosen among \(master.variants.count)")
            for limit in [0, 64000, Int.max] { require(master.chooseVariant(maxBitrate: limit) != nil, "no variant under \(limit)") }
        case .media(let media):
            require(media.segments.count <= limits.maxSegments, "more segments than the bound")
            for (index, segment) in media.segments.enumerated() {
                require(segment.sequence == media.mediaSequence + index, "sequence numbers not contiguous")
                require(segment.duration >= 0 && segment.duration.isFinite, "bad duration")
                if let iv = segment.key?.iv { require(iv.count == 16, "IV of \(iv.count) bytes") }
                require(segment.key?.initializationVector(forSequence: segment.sequence).count ?? 16 == 16, "IV not 16 bytes")
            }
            var tracker = HLSPlaylistTracker()
            let first = tracker.loaded(media, loadStartedAt: 1000)
            var handedOut = first.segments.map(\.sequence)
            let second = tracker.loaded(media, loadStartedAt: 1010)
            handedOut += second.segments.map(\.sequence)
            require(handedOut == Array(Set(handedOut)).sorted(), "a segment handed out twice or out of order: \(handedOut)")
            for update in [first, second] {
                if case .reload(let at) = update.next { require(at > 1000 && at <= 1010 + 30, "reload at \(at)") }
            }
        }
    } catch {
        // Typed errors are the answer for bad playlists.
    }
    return 0
}
