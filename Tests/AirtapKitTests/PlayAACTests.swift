@testable import AirtapKit
import AirtapTestSupport
import Foundation
@testable import TestStation
import Testing

/// `airtap play` on AAC stations (ffmpeg's LC encoder in the test station), captured through ALSA's
/// file plugin: output rate and channels from the decoder, each tone at its pitch, every frame
/// sent heard, and titles that change with the audio.
@Suite("Play: AAC")
struct PlayAACTests {
    static let titles = ["Tone A - 440", "Tone B - 554", "Tone C - 659"]
    static let trackSeconds = 1.5
    static let sentSeconds = 4.5

    static func configuration(sampleRate: Int, channels: Int, bitrate: Int) -> StationConfiguration {
        var configuration = StationConfiguration(metaint: 2000, bitrate: bitrate, sampleRate: sampleRate, channels: channels,
                                                 trackSeconds: trackSeconds, titles: titles, maxSeconds: sentSeconds)
        configuration.codec = .aac
        return configuration
    }

    /// Output PCM frames per ADTS frame: 1024 at the core rate, twice that when FAAD2 upsamples.
    static func outputFramesPerPacket(_ program: StationProgram, outputRate: Int) -> Int {
        program.samplesPerFrame * outputRate / program.sampleRate
    }

    static func expectTones(_ wav: WAVAudio, program: StationProgram, perPacket: Int) {
        for track in program.tracks {
            let start = program.frameIndex(atOrAfter: track.startOffset) * perPacket
            // The tone only: a track's trailing silence would lower a zero-crossing count.
            let toneEnd = start + Int(track.toneSeconds * Double(wav.sampleRate))
            let end = min(program.frameIndex(atOrAfter: track.endOffset) * perPacket, toneEnd, wav.frameCount)
            guard end - start > wav.sampleRate / 2 else { continue }
            let margin = wav.sampleRate / 5
            let measured = wav.frequency(frames: (start + margin)..<(end - margin))
            #expect(abs(measured - track.frequency) / track.frequency < 0.02,
                    "track \(track.index): \(measured) Hz, expected \(track.frequency) Hz")
        }
    }

    @Test("LC 44.1 kHz stereo, LC 22.05 kHz mono (FAAD2: 44.1 kHz out) and LC 44.1 kHz mono: the device runs at the decoder's rate, every frame sent is played, each tone at its pitch",
          arguments: [(44100, 2, 96), (22050, 1, 48), (44100, 1, 64)])
    func wavCapture(sampleRate: Int, channels: Int, bitrate: Int) async throws {
        let server = try await TestStationServer.start(Self.configuration(sampleRate: sampleRate, channels: channels, bitrate: bitrate))
        defer { Task { try? await server.stop() } }
        let program = server.program
        let wav = try PlayTests.wavPath()
        let result = try await AirtapBinary.run(["play", server.streamURL, "--device", "file:'\(wav)',wav",
                                           "--buffer", "0.5s", "--retries", "0"])
        #expect(result.status == 0, "\(result.stderr)")
        let audio = try WAVAudio(path: wav)
        // FAAD2 doubles LC at 24 kHz or less and puts mono on both channels.
        #expect(audio.sampleRate == 44100 && audio.channels == 2, "\(audio.sampleRate) Hz × \(audio.channels)")
        let perPacket = Self.outputFramesPerPacket(program, outputRate: audio.sampleRate)
        let packets = program.frameIndex(atOrAfter: program.audioByteCount(from: 0, seconds: Self.sentSeconds))
        #expect(audio.frameCount == packets * perPacket)
        Self.expectTones(audio, program: program, perPacket: perPacket)
        #expect(result.stderr.contains("title: Tone B - 554"))
        #expect(result.stderr.contains("stopped: end of stream"))
    }

    @Test("Titles in sync on AAC: shown once the audio at their packet is heard, with the old tone before and the new one after that sample",
          arguments: [44100, 22050])
    func titleTiming(sampleRate: Int) async throws {
        let server = try await TestStationServer.start(Self.configuration(sampleRate: sampleRate, channels: 2, bitrate: 64))
        defer { Task { try? await server.stop() } }
        let program = server.program
        let wav = try PlayTests.wavPath()
        let (reason, observer) = try await PlayTests.play(server, bufferSeconds: 2.5, wav: wav)
        #expect(reason == .endOfStream)
        let audio = try WAVAudio(path: wav)
        let perPacket = Self.outputFramesPerPacket(program, outputRate: audio.sampleRate)
        let announced = announcedTitles(server, audioCount: program.audioByteCount(from: 0, seconds: Self.sentSeconds))
        let statuses = observer.statuses.withLock { $0 }
        #expect(announced.count == 3)
        for (index, title) in announced.enumerated().dropFirst() {
            let titleFrame = program.frameIndex(atOrAfter: title.audioOffset) * perPacket
            let shown = try #require(statuses.first { $0.title?.raw == title.title }, "\(title.title) never shown")
            #expect(shown.framesWritten >= titleFrame, "\(title.title): written \(shown.framesWritten) < \(titleFrame)")
            #expect(shown.framesHeard >= titleFrame, "\(title.title): heard \(shown.framesHeard) < \(titleFrame)")
            // The title goes out in the first metadata block after the boundary, so it is heard a
            // little after the new track starts. Before the boundary the old track plays (up to its
            // last frames: the encoder's end padding); after the title's sample (past the new
            // track's encoder priming, one frame, and a frame of transition) the new one.
            let boundaryFrame = program.frameIndex(atOrAfter: program.tracks[index].startOffset) * perPacket
            let quarter = audio.sampleRate / 4
            let before = audio.frequency(frames: (boundaryFrame - quarter - 2 * perPacket)..<(boundaryFrame - 2 * perPacket))
            let after = audio.frequency(frames: (titleFrame + 2 * perPacket)..<(titleFrame + 2 * perPacket + quarter))
            let old = program.tracks[index - 1].frequency, new = program.tracks[index].frequency
            #expect(abs(before - old) / old < 0.03, "\(title.title): \(before) Hz before")
            #expect(abs(after - new) / new < 0.03, "\(title.title): \(after) Hz after")
        }
    }
}
