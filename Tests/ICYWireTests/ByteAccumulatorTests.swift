@testable import ICYWire
import SplitFixtures
import Testing

/// The accumulator every framer keeps its undecided bytes in: the same output however the
/// bytes arrive, a reader re-run only once the bytes it asked for are there, and storage
/// that stays proportional to what is undecided.
@Suite struct ByteAccumulatorTests {
    /// A minimal reader on the accumulator: records of a length byte and that many bytes.
    struct RecordReader {
        var input = ByteAccumulator()
        var records: [(position: Int, bytes: ArraySlice<UInt8>)] = []
        var parseAttempts = 0
        var largestStorage = 0

        mutating func push(_ bytes: [UInt8]) {
            input.append(bytes)
            largestStorage = max(largestStorage, input.storage.count)
            guard input.hasNeededBytes else { return }
            let buffer = input.storage
            while input.readableCount > 0 {
                parseAttempts += 1
                let start = input.readIndex
                let length = Int(buffer[start])
                guard input.readableCount >= 1 + length else {
                    input.needReadable(1 + length)
                    return
                }
                records.append((input.streamOffset(of: start + 1), buffer[(start + 1)..<(start + 1 + length)]))
                input.markShared()
                input.consume(1 + length)
            }
        }

        var observed: [Observation] { records.map { Observation(position: $0.position, bytes: Array($0.bytes)) } }
    }

    struct Observation: Equatable {
        let position: Int
        let bytes: [UInt8]
    }

    private func recordStream(count: Int) -> [UInt8] {
        var generator = SplitMix64(seed: 7)
        var stream: [UInt8] = []
        for index in 0..<count {
            let length = index % 9 == 0 ? 0 : Int(generator.next() % 256)
            stream.append(UInt8(length))
            stream += generator.bytes(length)
        }
        return stream
    }

    @Test("Records come out the same fed whole, byte by byte and in random splits, slices intact after later appends")
    func splitInvariant() {
        let stream = recordStream(count: 300)
        let splits = Splits.all(stream, randomCount: 24)
        var reference = RecordReader()
        for chunk in splits[0] { reference.push(chunk) }
        #expect(reference.records.count == 300)
        #expect(reference.input.readableCount == 0)
        // Every byte is a length byte or in a record, at its own stream offset.
        var offset = 0
        for record in reference.records {
            #expect(record.position == offset + 1)
            #expect(Array(record.bytes) == Array(stream[(offset + 1)..<(offset + 1 + record.bytes.count)]))
            offset += 1 + record.bytes.count
        }
        #expect(offset == stream.count)
        for (index, chunks) in splits.enumerated().dropFirst() {
            var reader = RecordReader()
            for chunk in chunks { reader.push(chunk) }
            #expect(reader.observed == reference.observed, "split #\(index) (\(chunks.count) chunks) differs")
        }
    }

    @Test("Fed one byte at a time, a record is parsed about twice: once to learn its length, once when it is whole")
    func needMarkGatesTheReader() {
        let stream = recordStream(count: 300)
        var reader = RecordReader()
        for byte in stream { reader.push([byte]) }
        #expect(reader.records.count == 300)
        #expect(reader.parseAttempts <= 2 * 300 + 1, "\(reader.parseAttempts) parse attempts for \(stream.count) bytes")
    }

    @Test("Consumed bytes are dropped once they outnumber the live ones: storage stays near one record plus one push")
    func storageStaysBounded() {
        let stream = recordStream(count: 2000)
        for chunkSize in [1, 7, 300] {
            var reader = RecordReader()
            var offset = 0
            while offset < stream.count {
                let end = min(offset + chunkSize, stream.count)
                reader.push(Array(stream[offset..<end]))
                offset = end
            }
            #expect(reader.records.count == 2000)
            // A record is at most 256 bytes: live bytes never exceed 256 + a push, dead ones never exceed live ones by more than a push.
            #expect(reader.largestStorage <= 2 * (256 + chunkSize) + chunkSize, "chunk \(chunkSize): \(reader.largestStorage)")
        }
    }

    @Test("Removing everything moves the stream offset on and clears the need mark")
    func removeAll() {
        var input = ByteAccumulator()
        input.append([1, 2, 3])
        input.needReadable(10)
        #expect(!input.hasNeededBytes)
        input.removeAll(nextStreamOffset: 50)
        #expect(input.hasNeededBytes)
        #expect(input.readableCount == 0)
        input.append([4])
        #expect(input.readOffset == 50)
        #expect(input.streamOffset(of: input.readIndex) == 50)
    }
}

/// Both framers on the accumulator: exact events (not just totals) the same however the
/// bytes arrive, and a partial Ogg page parsed once its declared length is there.
@Suite struct FramerAccumulatorTests {
    struct OggObservation: Equatable {
        let isPage: Bool
        let position: Int
        let count: Int
        let bytes: [UInt8]
    }

    /// Events with adjacent skips merged (the one difference a split may make).
    private func oggEvents(_ chunks: [[UInt8]]) -> (events: [OggObservation], framer: OggFramer) {
        var framer = OggFramer()
        var events: [OggObservation] = []
        func handle(_ event: OggFramerEvent) {
            switch event {
            case .page(let page, let position):
                events.append(OggObservation(isPage: true, position: position, count: page.bytes.count, bytes: Array(page.bytes)))
            case .skipped(let position, let count):
                if let last = events.last, !last.isPage, last.position + last.count == position {
                    events[events.count - 1] = OggObservation(isPage: false, position: last.position, count: last.count + count, bytes: [])
                } else {
                    events.append(OggObservation(isPage: false, position: position, count: count, bytes: []))
                }
            }
        }
        for chunk in chunks { framer.push(chunk, handle) }
        framer.finish(handle)
        return (events, framer)
    }

    private func messyOggStream() -> (stream: [UInt8], pageCount: Int) {
        var links = OggFixtures.link(serial: 1, codec: .vorbis, title: "Eins", audioPages: 6)
        links[5][70] ^= 0x10  // a corrupt audio page: skipped whole
        var stream: [UInt8] = [9, 0x4F, 0x67, 0x67]  // joined mid-page, ending in a partial pattern
        stream += links.joined()
        stream += [0x4F, 0x67, 0x67, 0x53, 0, 0, 7]  // a false capture pattern
        let second = OggFixtures.link(serial: 2, codec: .opus, title: "Zwei", audioPages: 5, audioPacketLength: 900)
        stream += second.joined()
        // Cut off: the pages wholly inside the first 500 bytes count, the rest is skipped.
        let third = OggFixtures.link(serial: 3, codec: .vorbis, title: "Drei")
        stream += third.joined().prefix(500)
        let thirdWholePages = third.indices.filter { third[...$0].reduce(0) { $0 + $1.count } <= 500 }.count
        return (stream, links.count - 1 + second.count + thirdWholePages)
    }

    @Test("Ogg pages and skips are the same fed whole, byte by byte and in random splits")
    func oggSplitInvariant() {
        let (stream, pageCount) = messyOggStream()
        let splits = Splits.all(stream, randomCount: 24)
        let reference = oggEvents(splits[0]).events
        #expect(reference.filter(\.isPage).count == pageCount)
        #expect(reference.reduce(0) { $0 + $1.count } == stream.count, "every byte is a page byte or skipped")
        for (index, chunks) in splits.enumerated().dropFirst() {
            #expect(oggEvents(chunks).events == reference, "split #\(index) (\(chunks.count) chunks) differs")
        }
    }

    @Test("Ogg fed one byte at a time parses each page a bounded number of times, not once per byte")
    func oggCostIsLinear() {
        let (stream, pageCount) = messyOggStream()
        let whole = oggEvents([stream]).framer
        let dripped = oggEvents(stream.map { [$0] }).framer
        // A page is parsed when its capture pattern, its header, its segment table and its
        // body have arrived: four attempts, plus a few for the corrupt page and the false pattern.
        #expect(whole.parseAttemptCount <= pageCount + 10)
        #expect(dripped.parseAttemptCount <= 4 * (pageCount + 2) + 10,
                "\(dripped.parseAttemptCount) parse attempts for \(pageCount) pages and \(stream.count) bytes")
    }

    @Test("MP3 and ADTS fed one byte at a time scan a bounded number of times per frame, not once per byte")
    func audioCostIsLinear() {
        var audio: [UInt8] = Fixtures.mp3Frames(100).joined().map { $0 }
        for index in 0..<100 { audio += Fixtures.adtsFrame(length: 300 + index, seed: index) }
        var framer = AudioFramer()
        var packets = 0
        for byte in audio {
            [byte].withUnsafeBytes { raw in
                framer.push(raw) { if case .packet = $0 { packets += 1 } }
            }
        }
        #expect(packets >= 198)
        // Once locked, a frame waits for its length: a scan or two per frame. Searching (at the
        // start and where the format changes) may scan at every byte of the two frames it checks.
        #expect(framer.scanCount <= 3 * 200 + 2 * (2 * 450), "\(framer.scanCount) scans for 200 frames, \(audio.count) bytes")
    }
}
