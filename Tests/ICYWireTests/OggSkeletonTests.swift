@testable import ICYWire
import SplitFixtures
import Testing

/// Ogg Skeleton 4.0 streams built in the test: a fishead BOS page first, then the audio link's
/// BOS page, a fisbone page naming the audio stream, the audio's other header pages, the
/// Skeleton's (empty) EOS page, then the audio pages.
enum SkeletonFixtures {
    static func fishead() -> [UInt8] {
        var packet = Array("fishead\0".utf8)
        appendLE(4, bytes: 2, to: &packet)  // version 4.0
        appendLE(0, bytes: 2, to: &packet)
        for value: UInt64 in [0, 1000, 0, 1000] { appendLE(value, bytes: 8, to: &packet) }  // presentation and base time
        packet += [UInt8](repeating: 0, count: 20)  // UTC
        appendLE(0, bytes: 8, to: &packet)  // segment length
        appendLE(0, bytes: 8, to: &packet)  // content byte offset
        return packet
    }

    static func fisbone(serial: UInt32, codec: OggCodec) -> [UInt8] {
        var packet = Array("fisbone\0".utf8)
        appendLE(44, bytes: 4, to: &packet)  // message headers start 44 bytes after this field
        appendLE(UInt64(serial), bytes: 4, to: &packet)
        appendLE(codec == .vorbis ? 3 : 2, bytes: 4, to: &packet)
        appendLE(48000, bytes: 8, to: &packet)
        appendLE(1, bytes: 8, to: &packet)
        appendLE(0, bytes: 8, to: &packet)  // base granule
        appendLE(codec == .opus ? 3840 : 2, bytes: 4, to: &packet)  // preroll
        packet += [0, 0, 0, 0]  // granule shift, padding
        packet += Array("Content-Type: audio/\(codec == .opus ? "opus" : "vorbis")\r\nRole: audio/main\r\n".utf8)
        return packet
    }

    /// `audio` (a link's pages from `OggFixtures.link`, `audioPages` of them audio) with a
    /// Skeleton stream of serial `skeletonSerial` interleaved as the format lays it out.
    static func group(skeletonSerial: UInt32, audio: [[UInt8]], audioPages: Int, codec: OggCodec, audioSerial: UInt32)
        -> (pages: [[UInt8]], skeletonBytes: Int) {
        let head = OggPage.build(flags: .beginningOfStream, granulePosition: 0, serialNumber: skeletonSerial,
                                 sequenceNumber: 0, lacing: [80], body: fishead())
        let bone = fisbone(serial: audioSerial, codec: codec)
        let bonePage = OggPage.build(flags: [], granulePosition: 0, serialNumber: skeletonSerial, sequenceNumber: 1,
                                     lacing: [UInt8(bone.count)], body: bone)
        let end = OggPage.build(flags: .endOfStream, granulePosition: 0, serialNumber: skeletonSerial, sequenceNumber: 2,
                                lacing: [0], body: [])
        let headers = audio.count - audioPages
        let pages = [head, audio[0], bonePage] + audio[1..<headers] + [end] + audio[headers...]
        return (pages, head.count + bonePage.count + end.count)
    }

    struct Read: Equatable {
        var titles: [String?] = []
        var codecs: [OggCodec] = []
        var unsupported: [OggCodec] = []
        /// Serial numbers of the pages that came out as packets, in order.
        var packetSerials: [UInt32] = []
        var packetBytes = 0
        var audioSamples = 0
    }

    static func packetize(_ chunks: [[UInt8]]) -> Read {
        var packetizer = OggPacketizer()
        var result = Read()
        func handle(_ event: OggStreamEvent) {
            switch event {
            case .linkStarted(let link, _):
                result.titles.append(link.comments.streamTitle)
                result.codecs.append(link.info.codec)
            case .packet(let packet):
                result.packetBytes += packet.bytes.count
                result.audioSamples += packet.sampleCount
                if case .page(let page) = OggPage.parse(packet.bytes) { result.packetSerials.append(page.serialNumber) }
            case .unsupported(let codec):
                result.unsupported.append(codec)
            case .skipped, .malformed:
                break
            }
        }
        for chunk in chunks { packetizer.push(chunk, handle) }
        packetizer.finish(handle)
        return result
    }
}

@Suite struct OggSkeletonTests {
    @Test("A fishead packet names Skeleton, a stream with no audio")
    func skeletonCodec() {
        let codec = OggCodec(identificationPacket: SkeletonFixtures.fishead()[...])
        #expect(codec == .skeleton)
        #expect(codec.isMetadataOnly)
        #expect(OggAudioInfo(identificationPacket: SkeletonFixtures.fishead()[...]) == nil)
    }

    @Test("Skeleton beside Vorbis, then beside Opus (chained): the Skeleton pages are dropped, each audio link read whole, the same however the bytes are split")
    func skeletonBesideAudio() {
        let vorbis = SkeletonFixtures.group(
            skeletonSerial: 101, audio: OggFixtures.link(serial: 1, codec: .vorbis, title: "Eins"), audioPages: 3,
            codec: .vorbis, audioSerial: 1)
        let opus = SkeletonFixtures.group(
            skeletonSerial: 102, audio: OggFixtures.link(serial: 2, codec: .opus, title: "Zwei"), audioPages: 3,
            codec: .opus, audioSerial: 2)
        let stream = Array((vorbis.pages + opus.pages).joined())
        let whole = SkeletonFixtures.packetize([stream])
        #expect(whole.unsupported.isEmpty, "Skeleton is not a codec that ends the stream")
        #expect(whole.titles == ["Artist - Eins", "Artist - Zwei"])
        #expect(whole.codecs == [.vorbis, .opus])
        #expect(Set(whole.packetSerials) == [1, 2], "no Skeleton page reaches a sink")
        #expect(whole.packetBytes == stream.count - vorbis.skeletonBytes - opus.skeletonBytes,
                "every audio page kept, every Skeleton page dropped")
        #expect(whole.audioSamples == 2 * 3 * 4096)

        #expect(SkeletonFixtures.packetize(stream.map { [$0] }) == whole)
        var random = SplitMix64(seed: 2024)
        for _ in 0..<20 {
            var chunks: [[UInt8]] = []
            var rest = stream[...]
            while !rest.isEmpty {
                let count = Int.random(in: 1...700, using: &random)
                chunks.append(Array(rest.prefix(count)))
                rest = rest.dropFirst(count)
            }
            #expect(SkeletonFixtures.packetize(chunks) == whole)
        }
    }

    @Test("Skeleton first, and a second stream's BOS page after the audio's: the link starts at its own BOS page")
    func linkPositionIsTheAudioBOS() {
        let group = SkeletonFixtures.group(
            skeletonSerial: 7, audio: OggFixtures.link(serial: 8, codec: .vorbis, title: "Eins"), audioPages: 2,
            codec: .vorbis, audioSerial: 8)
        // A second logical stream grouped after the audio's BOS page (ignored: the first audio stream is kept).
        let other = OggFixtures.link(serial: 9, codec: .vorbis, title: "Beside")[0]
        let pages = [group.pages[0], group.pages[1], other] + group.pages[2...]
        var packetizer = OggPacketizer()
        var starts: [Int] = []
        var firstPacket: Int?
        packetizer.push(Array(pages.joined())) { event in
            if case .linkStarted(_, let position) = event { starts.append(position) }
            if case .packet(let packet) = event, firstPacket == nil { firstPacket = packet.position }
        }
        #expect(starts == [group.pages[0].count])
        #expect(firstPacket == group.pages[0].count)
    }
}
