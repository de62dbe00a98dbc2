import AACDecoding
import AudioDecoding
import Foundation
import ICYWire
import TestStation
import Testing

/// FAAD2 behind the decoder interface, fed ADTS that ffmpeg's `aac` encoder makes from a tone
/// (no committed fixtures; no HE-AAC encoder installs here, so SBR is reached through FAAD2's
/// implicit SBR on a 22.05 kHz LC stream).
@Suite("AACDecoder")
struct AACDecoderTests {
    /// `seconds` of a sine at `frequency` as ADTS frames.
    static func adtsFrames(frequency: Int, sampleRate: Int, channels: Int, seconds: Double = 1) throws -> [[UInt8]] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-aac-\(UUID().uuidString).aac")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error",
                             "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=\(sampleRate):duration=\(seconds)",
                             "-ac", "\(channels)", "-c:a", "aac", "-b:a", "64k", "-f", "adts", "-y", output.path]
        try ChildProcesses.spawn(process)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        let bytes = try [UInt8](Data(contentsOf: output))
        var frames: [[UInt8]] = []
        var position = 0
        while position < bytes.count {
            let header = try #require(ADTSHeader(bytes[position...]))
            frames.append(Array(bytes[position..<position + header.frameLength]))
            position += header.frameLength
        }
        return frames
    }

    struct Decoded {
        var formats: Set<PCMFormat> = []
        var samples: [Int16] = []
        var perPacket: [Int] = []
    }

    static func decode(_ frames: [[UInt8]], with decoder: AACDecoder) throws -> Decoded {
        var decoded = Decoded()
        for frame in frames {
            var count = 0
            try decoder.decode(frame) { format, samples in
                decoded.formats.insert(format)
                decoded.samples += samples
                count += samples.count
            }
            decoded.perPacket.append(count)
        }
        return decoded
    }

    /// Zero crossings of channel 0 in the middle half.
    static func frequency(_ samples: [Int16], channels: Int, sampleRate: Int) -> Double {
        let frames = samples.count / channels
        let range = (frames / 4)..<(3 * frames / 4)
        var crossings = 0
        var previous = samples[range.lowerBound * channels]
        for frame in range.dropFirst() {
            let sample = samples[frame * channels]
            if (previous < 0) != (sample < 0) { crossings += 1 }
            previous = sample
        }
        return Double(crossings) / 2 / (Double(range.count) / Double(sampleRate))
    }

    @Test("LC 44.1 kHz stereo and mono, LC 22.05 kHz mono and stereo (doubled to 44.1 kHz): the rate and channels from FAAD2, the tone at its pitch, one frame out per frame in")
    func lcStreams() throws {
        // (encoded rate, channels, output rate, output channels): FAAD2 decodes LC at 24 kHz or
        // less at twice the rate (implicit SBR assumed), and puts mono out on both channels.
        let cases = [(44100, 2, 44100, 2), (44100, 1, 44100, 2), (22050, 1, 44100, 2), (22050, 2, 44100, 2)]
        for (rate, channels, outputRate, outputChannels) in cases {
            let frames = try Self.adtsFrames(frequency: 440, sampleRate: rate, channels: channels)
            let decoder = try AACDecoder()
            let decoded = try Self.decode(frames, with: decoder)
            #expect(decoded.formats == [PCMFormat(sampleRate: outputRate, channels: outputChannels)], "\(rate) Hz × \(channels)")
            // The held-back first frame is paid for with silence: every packet gives one frame.
            let perFrame = 1024 * outputRate / rate * outputChannels
            #expect(decoded.perPacket.allSatisfy { $0 == perFrame }, "\(rate) Hz: \(Set(decoded.perPacket))")
            #expect(decoded.perPacket.prefix(1) == [perFrame])
            #expect(decoded.samples.prefix(perFrame).allSatisfy { $0 == 0 })
            let measured = Self.frequency(decoded.samples, channels: outputChannels, sampleRate: outputRate)
            #expect(abs(measured - 440) < 440 * 0.02, "\(rate) Hz × \(channels): \(measured) Hz")
            let info = try #require(decoder.lastFrame)
            #expect(info.outputSampleRate == outputRate)
            // No SBR data in an LC stream, upsampled or not: LC, not HE-AAC.
            #expect(info.profile == .lc, "\(info)")
            #expect(!info.hasSBR && !info.hasPS)
            #expect(decoder.skippedFrames == 0)
        }
    }

    @Test("The profile from FAAD2's flags: SBR is HE-AAC, SBR with PS is HE-AAC v2, neither is the core's object type")
    func profiles() {
        func profile(_ objectType: Int, sbr: Bool, ps: Bool) -> AACFrameInfo.Profile {
            AACFrameInfo(objectType: objectType, hasSBR: sbr, hasPS: ps, outputSampleRate: 44100, outputChannels: 2).profile
        }
        #expect(profile(2, sbr: false, ps: false) == .lc)
        #expect(profile(2, sbr: true, ps: false) == .he)
        #expect(profile(5, sbr: true, ps: false) == .he)
        #expect(profile(2, sbr: true, ps: true) == .heV2)
        #expect(profile(29, sbr: true, ps: true) == .heV2)
        #expect(profile(1, sbr: false, ps: false) == .main)
        #expect(profile(4, sbr: false, ps: false) == .ltp)
        #expect(profile(0, sbr: false, ps: false) == .other)
    }

    @Test("Broken frames are skipped and counted, never a trap; a stream of nothing but garbage ends in .malformed; after reset the stream decodes again")
    func hostileFrames() throws {
        let frames = try Self.adtsFrames(frequency: 880, sampleRate: 44100, channels: 2, seconds: 0.5)
        let decoder = try AACDecoder()
        _ = try Self.decode(Array(frames.prefix(5)), with: decoder)
        var random = SystemRandomNumberGenerator()
        var malformed = false
        for index in 0..<200 {
            // A valid header, a payload of noise, and every so often an impossible length.
            var frame = frames[5 + index % 10]
            for position in 7..<frame.count { frame[position] = UInt8.random(in: 0...255, using: &random) }
            if index % 7 == 0 { frame += [UInt8](repeating: 0xFF, count: 9000) }
            do {
                try decoder.decode(frame) { _, samples in #expect(samples.count <= 2048 * 8) }
            } catch {
                #expect(error.kind == .malformed)
                malformed = true
                break
            }
        }
        #expect(decoder.skippedFrames > 0)
        #expect(malformed || decoder.skippedFrames < 64)
        decoder.reset()
        let decoded = try Self.decode(Array(frames.suffix(10)), with: decoder)
        #expect(decoded.formats == [PCMFormat(sampleRate: 44100, channels: 2)])
        #expect(decoded.perPacket.allSatisfy { $0 == 2048 })
    }
}
