@testable import HLSWire
@testable import ICYWire
import Testing

/// The tracker on made-up playlists and times: no sockets, no clocks.
@Suite struct HLSPlaylistTrackerTests {
    private func playlist(sequence: Int, count: Int, target: Int = 6, endList: Bool = false) -> HLSMediaPlaylist {
        HLSMediaPlaylist(
            targetDuration: target, mediaSequence: sequence, discontinuitySequence: 0, playlistType: nil, hasEndList: endList,
            segments: (0..<count).map { index in
                HLSSegment(uri: "s\(sequence + index).ts", sequence: sequence + index, duration: Double(target), title: nil,
                           isDiscontinuity: false, programDateTime: nil, byteRange: nil, key: nil, map: nil)
            })
    }

    @Test func liveStartsNearTheEdgeAndReloadsPerRFC() {
        var tracker = HLSPlaylistTracker()
        let first = tracker.loaded(playlist(sequence: 100, count: 6), loadStartedAt: 0)
        #expect(first.segments.map(\.sequence) == [103, 104, 105])
        #expect(first.gap == nil)
        #expect(first.next == .reload(at: 6))

        // One new segment: target duration after the load began.
        let second = tracker.loaded(playlist(sequence: 101, count: 6), loadStartedAt: 6.2)
        #expect(second.segments.map(\.sequence) == [106])
        #expect(second.next == .reload(at: 12.2))

        // Unchanged: half the target duration.
        let third = tracker.loaded(playlist(sequence: 101, count: 6), loadStartedAt: 12.2)
        #expect(third.segments.isEmpty)
        #expect(third.next == .reload(at: 15.2))
    }

    @Test func endListPlaysFromTheStartAndEnds() {
        var tracker = HLSPlaylistTracker()
        let update = tracker.loaded(playlist(sequence: 0, count: 5, endList: true), loadStartedAt: 0)
        #expect(update.segments.map(\.sequence) == [0, 1, 2, 3, 4])
        #expect(update.next == .ended)
        #expect(tracker.state == .ended)
    }

    @Test func liveThatEndsHandsOutTheRestThenEnds() {
        var tracker = HLSPlaylistTracker()
        _ = tracker.loaded(playlist(sequence: 0, count: 4), loadStartedAt: 0)
        let last = tracker.loaded(playlist(sequence: 1, count: 5, endList: true), loadStartedAt: 6)
        #expect(last.segments.map(\.sequence) == [4, 5])
        #expect(last.next == .ended)
    }

    @Test func windowMovedPastIsAGap() {
        var tracker = HLSPlaylistTracker()
        _ = tracker.loaded(playlist(sequence: 10, count: 3), loadStartedAt: 0)  // hands out 10...12
        let late = tracker.loaded(playlist(sequence: 20, count: 3), loadStartedAt: 60)
        #expect(late.gap == HLSPlaylistTracker.Gap(reason: .windowMovedPast, missedSegments: 7))
        #expect(late.segments.map(\.sequence) == [20, 21, 22])
    }

    @Test func sequenceGoingBackwardsRestartsAtTheLiveEdge() {
        var tracker = HLSPlaylistTracker()
        _ = tracker.loaded(playlist(sequence: 500, count: 5), loadStartedAt: 0)
        let restarted = tracker.loaded(playlist(sequence: 0, count: 5), loadStartedAt: 6)
        #expect(restarted.gap == HLSPlaylistTracker.Gap(reason: .sequenceWentBackwards, missedSegments: 0))
        #expect(restarted.segments.map(\.sequence) == [2, 3, 4])
        // And it follows the new numbering from there.
        let next = tracker.loaded(playlist(sequence: 1, count: 5), loadStartedAt: 12)
        #expect(next.segments.map(\.sequence) == [5])
        #expect(next.gap == nil)
    }

    @Test func hostileTargetDurationsAreClamped() {
        var zero = HLSPlaylistTracker()
        #expect(zero.loaded(playlist(sequence: 0, count: 3, target: 0), loadStartedAt: 100).next == .reload(at: 101))
        var day = HLSPlaylistTracker()
        #expect(day.loaded(playlist(sequence: 0, count: 3, target: 86400), loadStartedAt: 100).next == .reload(at: 130))
    }

    @Test func aPlaylistThatNeverChangesStalls() {
        var tracker = HLSPlaylistTracker()
        let same = playlist(sequence: 0, count: 3, target: 2)
        _ = tracker.loaded(same, loadStartedAt: 0)
        var time = 0.0
        var next = HLSPlaylistTracker.Next.reload(at: 0)
        var reloads = 0
        while case .reload(let at) = next, reloads < 100 {
            time = max(at, time + 1)
            next = tracker.loaded(same, loadStartedAt: time).next
            reloads += 1
        }
        #expect(next == .stalled)
        #expect(time >= 12 && time <= 14)
        // A failed reload goes on at half the target duration until the same bound.
        #expect(tracker.reloadFailed(lastTargetDuration: 2, at: 13) == .stalled)
        var fresh = HLSPlaylistTracker()
        _ = fresh.loaded(same, loadStartedAt: 0)
        #expect(fresh.reloadFailed(lastTargetDuration: 2, at: 3) == .reload(at: 4))
    }

    @Test func segmentFailureIsAGapOfOne() {
        #expect(HLSPlaylistTracker().segmentFailed() == HLSPlaylistTracker.Gap(reason: .segmentFailed, missedSegments: 1))
    }

    @Test("Variants best first: audio-only ones first, those under the cap from the highest down, then those over it from the lowest up")
    func rankedVariants() throws {
        guard case .master(let master) = try HLSPlaylist.parse(Array("""
            #EXTM3U
            #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.2"
            a64.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=500000,CODECS="avc1.4d401e,mp4a.40.2",RESOLUTION=640x360
            video.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=256000,CODECS="mp4a.40.2"
            a256.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.2"
            a128.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=32000,CODECS="mp4a.40.5"
            a32.m3u8

            """.utf8), baseURL: "http://h/") else { throw HLSPlaylistError.empty }
        let names = { (variants: [HLSVariant]) in variants.map { $0.uri.split(separator: "/").last.map(String.init) ?? "" } }
        #expect(names(master.rankedVariants()) == ["a256.m3u8", "a128.m3u8", "a64.m3u8", "a32.m3u8", "video.m3u8"])
        #expect(names(master.rankedVariants(maxBitrate: 100_000)) == ["a64.m3u8", "a32.m3u8", "a128.m3u8", "a256.m3u8", "video.m3u8"])
        #expect(master.chooseVariant(maxBitrate: 100_000) == master.rankedVariants(maxBitrate: 100_000).first)
    }

    @Test("A failed variant is set aside for a while: the next best is used, none when every other is set aside, and it comes back after its time")
    func variantFallback() {
        var fallback = HLSVariantFallback(setAsideSeconds: 60)
        let candidates = ["hi", "mid", "lo"]
        #expect(fallback.choose(candidates, now: 0) == "hi")
        #expect(fallback.next(after: "hi", among: candidates, now: 10) == "mid")
        #expect(fallback.choose(candidates, now: 20) == "mid")
        #expect(fallback.next(after: "mid", among: candidates, now: 20) == "lo")
        #expect(fallback.next(after: "lo", among: candidates, now: 30) == nil)
        // Every one set aside: the one whose time ends first.
        #expect(fallback.choose(candidates, now: 40) == "hi")
        #expect(fallback.choose(candidates, now: 71) == "hi")
        #expect(!fallback.isSetAside("hi", now: 71))
        #expect(fallback.isSetAside("lo", now: 71))
    }

    @Test("After a switch of variant, the next load hands out from the segment to resume at, even one handed out before, with no gap")
    func switchedVariantResumes() {
        var tracker = HLSPlaylistTracker()
        _ = tracker.loaded(playlist(sequence: 100, count: 6), loadStartedAt: 0)
        #expect(tracker.nextSequence == 106)
        tracker.switchedVariant(resumingAt: 104, now: 1)
        let update = tracker.loaded(playlist(sequence: 99, count: 7), loadStartedAt: 2)
        #expect(update.segments.map(\.sequence) == [104, 105])
        #expect(update.gap == nil)
    }

    @Test("A window of three 2 s segments under a target duration of 10 s: reloads follow the 2 s segments, and a steady 2 s pace loses nothing")
    func windowFasterThanItsTargetDuration() {
        func window(_ sequence: Int) -> HLSMediaPlaylist {
            var playlist = playlist(sequence: sequence, count: 3, target: 10)
            for index in playlist.segments.indices { playlist.segments[index].duration = 2 }
            return playlist
        }
        var tracker = HLSPlaylistTracker()
        var update = tracker.loaded(window(0), loadStartedAt: 0)
        #expect(update.next == .reload(at: 2))
        var handedOut = update.segments.map(\.sequence)
        for step in 1...30 {
            let at = Double(step) * 2
            update = tracker.loaded(window(step), loadStartedAt: at)
            #expect(update.gap == nil, "at \(at) s")
            #expect(update.next == .reload(at: at + 2))
            handedOut += update.segments.map(\.sequence)
        }
        #expect(handedOut == Array(0...32), "60 s of segments, none lost")
        // Unchanged: half the segment's length.
        #expect(tracker.loaded(window(30), loadStartedAt: 61).next == .reload(at: 62))
    }

    @Test("A window long enough for its target duration that still slid past segments: reloads follow the segments' length from then on")
    func windowThatSlidPastSpeedsUpReloads() {
        func window(_ sequence: Int) -> HLSMediaPlaylist {
            var playlist = playlist(sequence: sequence, count: 20, target: 6)
            for index in playlist.segments.indices { playlist.segments[index].duration = 4 }
            return playlist
        }
        var tracker = HLSPlaylistTracker()
        #expect(tracker.loaded(window(0), loadStartedAt: 0).next == .reload(at: 6))
        #expect(!tracker.windowOutpacesTarget)
        let late = tracker.loaded(window(25), loadStartedAt: 6)
        #expect(late.gap?.reason == .windowMovedPast)
        #expect(late.next == .reload(at: 10))
        #expect(tracker.loaded(window(26), loadStartedAt: 10).next == .reload(at: 14))
    }
}
