import AudioDecoding
import Foundation
import ICYWire
import ID3Tagging
import LameEncoding
import MPG123Decoding
import Testing

/// The adapters against each other, through the real C libraries: what LAME encodes, the framer
/// cuts and mpg123 decodes back to the tone it was; what libid3tag renders, it reads back.
@Suite("Adapters: round trips through the C libraries")
struct AdapterRoundTripTests {
    /// `seconds` of a sine at `frequency`, 16-bit interleaved, half scale.
    static func tone(frequency: Double, seconds: Double, sampleRate: Int = 44100, channels: Int = 2) -> [Int16] {
        let count = Int(seconds * Double(sampleRate))
        var samples: [Int16] = []
        samples.reserveCapacity(count * channels)
        for index in 0..<count {
            let value = Int16(16384 * sin(2 * Double.pi * frequency * Double(index) / Double(sampleRate)))
            for _ in 0..<channels { samples.append(value) }
        }
        return samples
    }

    /// Rising zero crossings of the first channel per second: the frequency of a clean sine.
    static func frequency(of samples: ArraySlice<Int16>, channels: Int, sampleRate: Int) -> Double {
        var crossings = 0
        var previous = samples.first ?? 0
        var frames = 0
        for (offset, value) in samples.enumerated() where offset % channels == 0 {
            if previous < 0 && value >= 0 { crossings += 1 }
            previous = value
            frames += 1
        }
        return Double(crossings) * Double(sampleRate) / Double(max(frames, 1))
    }

    static func packets(_ bytes: [UInt8], framer: inout AudioFramer) -> [Packet] {
        (framer.push(bytes) + framer.finish()).compactMap { event -> Packet? in
            if case .packet(let packet) = event { packet } else { nil }
        }
    }

    @Test("LAME -> framer -> mpg123: 2 s of 440 Hz come back as 2 s of 440 Hz at 44.1 kHz", arguments: [1, 2])
    func mp3RoundTrip(channels: Int) throws {
        let encoder = try MP3Encoder(channels: channels)
        let bytes = encoder.encode(interleaved: Self.tone(frequency: 440, seconds: 2, channels: channels)) + encoder.flush()
        var framer = AudioFramer()
        let packets = Self.packets(bytes, framer: &framer)
        #expect(framer.skippedByteCount == 0)
        #expect(packets.allSatisfy { $0.header.codec == .mp3 && $0.header.sampleRate == 44100 })

        let decoder = try MP3Decoder()
        var decoded: [Int16] = []
        var formats = Set<PCMFormat>()
        for packet in packets {
            try decoder.decode(packet.bytes) { format, samples in
                formats.insert(format)
                decoded.append(contentsOf: samples)
            }
        }
        #expect(formats == [PCMFormat(sampleRate: 44100, channels: channels)])
        // LAME adds its encoder delay and pads the last frame: within two frames of 2 s.
        let frames = decoded.count / channels
        #expect(abs(frames - 88200) <= 2 * 1152, "\(frames) sample frames")
        // The middle second, away from the edges' delay and padding.
        let middle = decoded[(channels * 22050)..<(channels * 66150)]
        let measured = Self.frequency(of: middle, channels: channels, sampleRate: 44100)
        #expect(abs(measured - 440) < 3, "measured \(measured) Hz")
    }

    @Test("A packet of garbage does not stop mpg123: the frames after it decode")
    func decoderSkipsGarbage() throws {
        let encoder = try MP3Encoder()
        let bytes = encoder.encode(interleaved: Self.tone(frequency: 440, seconds: 1)) + encoder.flush()
        var framer = AudioFramer()
        let packets = Self.packets(bytes, framer: &framer)
        let decoder = try MP3Decoder()
        var produced = 0
        for (index, packet) in packets.enumerated() {
            let bytes = index == 10 ? [UInt8](repeating: 0x55, count: packet.bytes.count)[...] : packet.bytes
            do { try decoder.decode(bytes) { _, samples in produced += samples.count } } catch { decoder.reset() }
        }
        #expect(produced / 2 > 44100 - 4 * 1152, "only \(produced / 2) sample frames")
    }

    @Test("libid3tag renders an ID3v2.4 tag that it reads back: UTF-8 text, in order")
    func id3RoundTrip() throws {
        let frames = ID3TextFrames([("TIT2", "Sœur's Song; Part=2"), ("TPE1", "坂本龍一"), ("TALB", "Airtap Test Station"),
                                    ("TRCK", "7"), ("TCON", "Ambient")])
        let tag = ID3Writer.render(ID3TagContent(text: frames, urls: [("WOAS", "http://example.invalid/x")], comment: "a comment"))
        #expect(Array(tag.prefix(3)) == Array("ID3".utf8))
        #expect(tag.count > 3 && tag[3] == 4, "not ID3v2.4")
        let read = try #require(ID3Reader.textFrames(in: tag))
        for (id, text) in frames.frames {
            #expect(read[id] == text, "\(id)")
        }
        #expect(read.title == "Sœur's Song; Part=2" && read.artist == "坂本龍一")
    }

    @Test("A title holding a NUL keeps what follows it in the tag (as a space)")
    func id3TitleWithNUL() throws {
        let frames = ID3TextFrames([("TIT2", "Before\u{0}After \u{1B}[31m")])
        let read = try #require(ID3Reader.textFrames(in: ID3Writer.render(ID3TagContent(text: frames, urls: [], comment: nil))))
        #expect(read.title == "Before After \u{1B}[31m")
    }
}
