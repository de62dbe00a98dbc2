import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapTestSupport
import Foundation
import ICYWire
import LameEncoding
import NIOPosix
@testable import TestStation
import Testing

/// `serve --transcode mp3:BITRATE`: AAC over HLS and Ogg Opus reach an ICY listener as CBR MP3,
/// with their titles, and a tone stays one tone across HLS segment boundaries.
@Suite("serve --transcode: MP3 for every receiver")
struct TranscodeTests {
    /// What a listener heard: the response head, the titles in order, the audio without ICY blocks.
    struct Heard {
        var head = ""
        var titles: [String] = []
        var audio: [UInt8] = []

        init(_ received: (head: String?, body: [UInt8])) {
            guard let head = received.head else { return }
            self.head = head
            guard let metaint = Self.header("icy-metaint", in: head).flatMap(Int.init) else {
                audio = received.body
                return
            }
            var demuxer = ICYDemuxer(metaint: metaint)
            for output in demuxer.consume(received.body) {
                switch output {
                case .audio(let bytes): audio += bytes
                case .metadata(let block):
                    if let title = StreamMetadata.parse(block.bytes).streamTitle, !title.isEmpty, title != titles.last { titles.append(title) }
                }
            }
        }

        static func header(_ name: String, in head: String) -> String? {
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name + ":") }
                .map { $0.split(separator: ":", maxSplits: 1)[1].trimmingCharacters(in: .whitespaces) }
        }

        /// The audio's MPEG frame headers, and the bytes between frames.
        var frames: (headers: [MP3FrameHeader], skipped: Int) {
            var framer = AudioFramer()
            let headers = (framer.push(audio) + framer.finish()).compactMap { output -> MP3FrameHeader? in
                if case .packet(let packet) = output, case .mpeg(let header) = packet.header { header } else { nil }
            }
            return (headers, framer.skippedByteCount)
        }
    }

    static func listen(_ port: Int, metadata: Bool, until done: @escaping @Sendable (Heard) -> Bool) async throws -> Heard {
        let listener = try await RelayTestListener.connect(port: port, metadata: metadata)
        try await waitFor("the listener to hear enough", seconds: 90) {
            let received = listener.received
            return done(Heard((received.head, received.body)))
        }
        let received = listener.received
        await listener.close()
        return Heard((received.head, received.body))
    }

    /// ffprobe's word on an MP3 file: codec, sample rate, bitrate of the stream.
    static func probe(_ audio: [UInt8]) async throws -> [String: String] {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("transcode-\(UUID().uuidString).mp3")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(audio).write(to: file)
        let output = try await toolOutput("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,bit_rate",
                                                               "-of", "default=noprint_wrappers=1", file.path])
        var fields: [String: String] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    /// `/status` of a one-station serve (the station's own object).
    static func status(_ port: Int) async throws -> [String: Any] {
        let answer = try await StationClient.fetch(port: port, path: "/status", timeout: .seconds(30))
        return try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any] ?? [:]
    }

    /// CBR MP3 at `bitrate` and `sampleRate`, every frame, read by ffprobe as such.
    static func expectCBR(_ heard: Heard, bitrate: Int, sampleRate: Int) async throws {
        #expect(Heard.header("content-type", in: heard.head) == "audio/mpeg", "\(heard.head)")
        #expect(Heard.header("icy-br", in: heard.head) == "\(bitrate)", "\(heard.head)")
        let (headers, skipped) = heard.frames
        #expect(headers.count > 100, "\(headers.count) frames")
        #expect(skipped == 0, "\(skipped) bytes between frames")
        #expect(headers.allSatisfy { $0.layer == .layer3 && $0.bitrate == bitrate * 1000 && $0.sampleRate == sampleRate })
        let probe = try await probe(heard.audio)
        #expect(probe["codec_name"] == "mp3", "\(probe)")
        #expect(probe["bit_rate"] == "\(bitrate * 1000)", "\(probe)")
        #expect(probe["sample_rate"] == "\(sampleRate)", "\(probe)")
    }

    @Test("An HLS AAC station served as CBR MP3 at 128k: ffprobe reads MP3, every frame 128 kbit/s, the timed titles as StreamTitle; status and /metrics say from AAC",
          .waitingForChildren)
    func hlsAAC() async throws {
        try await HLSStationTests.withHLS(.aac, .packedAudio, isVOD: false) { server, _ in
            let serve = try AirtapChild(serving: [server.url(path: "/hls/master.m3u8"), "--listen", "127.0.0.1:0", "--transcode", "mp3:128k"])
            let port = try await serve.listeningPort()
            // A title changes every 4 s: two changes and 6 s of audio within the time limit, even three times slower.
            let heard = try await Self.listen(port, metadata: true) { $0.titles.count >= 2 && $0.audio.count > 16_000 * 6 }
            #expect(heard.titles.allSatisfy { HLSStationTests.titles.contains($0) }, "\(heard.titles)")
            try await Self.expectCBR(heard, bitrate: 128, sampleRate: 44100)

            let status = try await Self.status(port)
            #expect(status["codec"] as? String == "MP3" && status["transcodedFrom"] as? String == "AAC", "\(status)")
            #expect(status["bitrate"] as? Int == 128, "\(status)")
            let metrics = try await StationClient.fetch(port: port, path: "/metrics", timeout: .seconds(30))
            #expect(String(decoding: metrics.body, as: UTF8.self).contains("airtap_transcoded_info{station=\""), "metrics")
            let page = try await StationClient.fetch(port: port, path: "/", headers: [("Accept", "text/html")], timeout: .seconds(30))
            #expect(String(decoding: page.body, as: UTF8.self).contains("transcoded from AAC"))
            #expect(try await serve.terminate() == 0, "\(serve.stderr)")
        }
    }

    @Test("An Ogg Opus station (48 kHz, titles in its links) served as CBR MP3 at 96k with its titles in ICY metadata",
          .waitingForChildren)
    func oggOpus() async throws {
        var configuration = StationConfiguration(trackSeconds: 2, pace: .realtime, titles: OggStationTests.titles)
        configuration.codec = .opus
        let server = try await TestStationServer.start(configuration)
        do {
            let serve = try AirtapChild(serving: [server.streamURL, "--listen", "127.0.0.1:0", "--transcode", "mp3:96"])
            let port = try await serve.listeningPort()
            let heard = try await Self.listen(port, metadata: true) { $0.titles.count >= 2 && $0.audio.count > 12_000 * 6 }
            #expect(heard.titles.allSatisfy { OggStationTests.titles.contains($0) }, "\(heard.titles)")
            try await Self.expectCBR(heard, bitrate: 96, sampleRate: 48000)
            #expect(try await Self.status(port)["transcodedFrom"] as? String == "Opus")
            #expect(try await serve.terminate() == 0, "\(serve.stderr)")
            try await server.stop()
        } catch {
            try? await server.stop()
            throw error
        }
    }

    /// One 600 s tone: a live window of 1 s segments plays it from the start, and the programme
    /// starts over only after ten minutes (the test's time limit), so the listener hears only
    /// segment boundaries, never the tone's end, however long a loaded machine takes to get there.
    static let toneConfiguration: StationConfiguration = {
        var configuration = StationConfiguration(bitrate: 64, trackSeconds: 600, pace: .fast, titles: ["One Tone"])
        configuration.codec = .aac
        return configuration
    }()

    @Test("A continuous tone over HLS segment boundaries stays continuous: decoded, no sample-to-sample jump a gap or a repeat would make, no silence",
          .waitingForChildren)
    func continuousTone() async throws {
        let program = try await StationProgram.encoding(Self.toneConfiguration)
        // A window of 30 segments: a starved machine whose reloads come late still finds every
        // segment in it, so any gap heard is the transcoder's, not the source's. (The join is
        // near the window's live end, about 30 s into the tone.)
        let site = try HLSSite.make(programs: [(program, 64)], codec: .aac, container: .packedAudio, titles: .timedID3,
                                    segmentSeconds: 1, isVOD: false, windowSegments: 30)
        let server = try await TestStationServer.start(Self.toneConfiguration, program: program, eventLoopGroup: HLSStationTests.loops, hls: site)
        do {
            let serve = try AirtapChild(serving: [server.url(path: "/hls/master.m3u8"), "--listen", "127.0.0.1:0", "--transcode", "mp3:128k"])
            let port = try await serve.listeningPort()
            // 6 s of audio at 128 kbit/s: five segment boundaries at least.
            let heard = try await Self.listen(port, metadata: false) { $0.audio.count > 16_000 * 6 }
            #expect(try await serve.terminate() == 0, "\(serve.stderr)")
            #expect(!serve.stderr.contains("segment lost"), "the source itself lost audio: \(serve.stderr)")
            let samples = try await Self.decode(heard.audio)
            #expect(samples.count > 44100 * 5, "\(samples.count) samples")
            // A decoder starting mid-stream needs a few frames (the bit reservoir), and the capture ends
            // inside one: judge between.
            let judged = samples.dropFirst(4 * 1152).dropLast(2 * 1152)
            let step = Self.largestStep(judged)
            // A 440 Hz tone at half scale moves at most 2π·440/44100·16384 ≈ 1030 per sample: a
            // gap or a splice of PCM jumps far beyond this.
            #expect(step < 2500, "a jump of \(step) between two samples")
            let quiet = Self.longestQuietRun(judged)
            #expect(quiet < 16, "\(quiet) samples in a row near zero; serve said: \(serve.stderr)")
            // A frame lost or repeated before the decoder shows no jump (the decoder's overlap
            // cross-fades it), but it moves the tone's phase, and a silence dips its level: both
            // measured every ten cycles.
            let (phaseStep, level) = Self.toneSteadiness(judged)
            #expect(phaseStep < 0.15, "the tone's phase moved by \(phaseStep) rad between two windows")
            #expect(level.lowerBound > 0.85 && level.upperBound < 1.15, "the tone's level ranged over \(level) of its median")
            try await server.stop()
        } catch {
            try? await server.stop()
            throw error
        }
    }

    @Test("record --transcode mp3:192k of a VOD HLS AAC station: every track an MP3 file at 192 kbit/s, named and tagged by its title, with an Info frame",
          .waitingForChildren)
    func record() async throws {
        try await HLSStationTests.withHLS(.aac, .mpegTS) { server, _ in
            let folder = try AirtapBinary.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let result = try await AirtapBinary.run(["record", server.url(path: "/hls/master.m3u8"), "--out", folder.path,
                                                     "--transcode", "mp3:192k"])
            #expect(result.status == 0, "\(result.stderr)")
            let files = try FileManager.default.subpathsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".mp3") }
            let names = Set(files.map { ($0 as NSString).lastPathComponent })
            #expect(names == Set(HLSStationTests.titles.map { "\($0).mp3" }), "\(files)\n\(result.stderr)")
            for file in files {
                let path = folder.appendingPathComponent(file).path
                let probe = try await toolOutput("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,bit_rate:format_tags=title",
                                                                      "-of", "default=noprint_wrappers=1", path])
                #expect(probe.contains("codec_name=mp3") && probe.contains("bit_rate=192000"), "\(file): \(probe)")
                let title = (file as NSString).lastPathComponent.dropLast(4).split(separator: " - ", maxSplits: 1).last ?? ""
                #expect(probe.contains("TAG:title=\(title)"), "\(file): \(probe)")
                let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
                #expect(bytes.range(of: Data("Info".utf8)) != nil, "\(file): no Info frame")
            }
        }
    }

    @Test("relay --to FILE --transcode mp3:128k: one CBR MP3 file of the whole VOD programme with its cue sheet; not to an Icecast mount",
          .waitingForChildren)
    func relayToFile() async throws {
        try await HLSStationTests.withHLS(.aac, .packedAudio) { server, _ in
            let folder = try AirtapBinary.temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let path = folder.appendingPathComponent("show.mp3").path
            let result = try await AirtapBinary.run(["relay", server.url(path: "/hls/master.m3u8"), "--to", path, "--transcode", "mp3:128k"])
            #expect(result.status == 0, "\(result.stderr)")
            let probe = try await toolOutput("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,bit_rate",
                                                                  "-of", "default=noprint_wrappers=1", path])
            #expect(probe.contains("codec_name=mp3") && probe.contains("bit_rate=128000"), "\(probe)")
            let cue = (try? String(contentsOfFile: path + ".cue", encoding: .utf8)) ?? ""
            #expect(HLSStationTests.titles.allSatisfy { title in cue.contains(title.split(separator: " - ").last.map(String.init) ?? title) }, "\(cue)")
        }
        let icecast = try await AirtapBinary.run(["relay", "http://127.0.0.1:9/x", "--to", "icecast://127.0.0.1:9/m", "--transcode", "mp3:128k"])
        #expect(icecast.status == 1 && icecast.stderr.contains("--transcode writes to a file or -"), "\(icecast.stderr)")
    }

    /// The left channel of an MP3 stream as ffmpeg decodes it.
    static func decode(_ audio: [UInt8]) async throws -> [Int16] {
        let folder = FileManager.default.temporaryDirectory
        let input = folder.appendingPathComponent("tone-\(UUID().uuidString).mp3")
        let output = folder.appendingPathComponent("tone-\(UUID().uuidString).raw")
        defer {
            try? FileManager.default.removeItem(at: input)
            try? FileManager.default.removeItem(at: output)
        }
        try Data(audio).write(to: input)
        _ = try await toolOutput("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", input.path, "-ac", "1", "-f", "s16le", output.path])
        let bytes = try Data(contentsOf: output)
        return stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
    }

    /// The tone's phase and level in windows of ten cycles: the largest change of phase between
    /// two windows (radians), and the range of levels as fractions of the median.
    static func toneSteadiness(_ samples: ArraySlice<Int16>) -> (phaseStep: Double, level: ClosedRange<Double>) {
        let values = samples.map(Double.init)
        // The frequency from the rising zero crossings (interpolated), over the whole capture.
        var crossings: [Double] = []
        for index in 1..<values.count where values[index - 1] < 0 && values[index] >= 0 {
            crossings.append(Double(index - 1) + values[index - 1] / (values[index - 1] - values[index]))
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 100 else { return (.infinity, 0...0) }
        let cyclesPerSample = Double(crossings.count - 1) / (last - first)
        let window = Int((10 / cyclesPerSample).rounded())
        var phases: [Double] = [], levels: [Double] = []
        for start in stride(from: 0, to: values.count - window, by: window) {
            var i = 0.0, q = 0.0
            for n in start..<(start + window) {
                let angle = 2 * Double.pi * cyclesPerSample * Double(n)
                i += values[n] * cos(angle)
                q += values[n] * sin(angle)
            }
            phases.append(atan2(q, i))
            levels.append(2 * (i * i + q * q).squareRoot() / Double(window))
        }
        let phaseStep = zip(phases, phases.dropFirst()).map { previous, next in
            abs(remainder(next - previous, 2 * Double.pi))
        }.max() ?? .infinity
        let median = levels.sorted()[levels.count / 2]
        return (phaseStep, (levels.min()! / median)...(levels.max()! / median))
    }

    static func largestStep(_ samples: ArraySlice<Int16>) -> Int {
        zip(samples, samples.dropFirst()).map { abs(Int($1) - Int($0)) }.max() ?? 0
    }

    static func longestQuietRun(_ samples: ArraySlice<Int16>) -> Int {
        var longest = 0, run = 0
        for sample in samples {
            run = abs(Int(sample)) < 200 ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }

    @Test("A bitrate MP3 lacks, another codec or no bitrate: one line, exit 1, on the command line and in stations.json",
          arguments: ["mp3:100k", "aac:128k", "mp3:", "mp3:128kk"])
    func badValues(value: String) async throws {
        let command = try await AirtapBinary.run(["serve", "http://127.0.0.1:9/x", "--transcode", value])
        #expect(command.status == 1, "\(command.stderr)")
        #expect(command.stderr.contains("--transcode '\(value)' takes mp3:BITRATE"), "\(command.stderr)")
        let folder = try AirtapBinary.temporaryFolder(with: """
            {"stations": [{"id": "a", "url": "http://127.0.0.1:9/x", "transcode": "\(value)"}]}
            """)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try await AirtapBinary.run(["serve", "a", "--stations", folder.appendingPathComponent("stations.json").path])
        #expect(file.status == 1, "\(file.stderr)")
        #expect(file.stderr.split(separator: "\n").count == 1 && file.stderr.contains("transcode '\(value)' takes mp3:BITRATE"), "\(file.stderr)")
    }
}

@Suite("--transcode values and the encoder's sample rate")
struct TranscodeSettingTests {
    @Test("mp3:128k, mp3:128 and MP3:320K parse; other codecs, bitrates MP3 lacks and junk do not")
    func parsing() {
        #expect(TranscodeSetting(parsing: "mp3:128k")?.bitrate == 128)
        #expect(TranscodeSetting(parsing: "mp3:128")?.bitrate == 128)
        #expect(TranscodeSetting(parsing: "MP3:320K")?.bitrate == 320)
        #expect(TranscodeSetting(parsing: "mp3:8k")?.description == "mp3:8k")
        for bad in ["mp3:100k", "mp3:0", "mp3:-128", "mp3:1280000", "opus:128k", "mp3:", "128k", "mp3:１２８k", "mp3:128kk"] {
            #expect(TranscodeSetting(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test("The station's own rate when MP3 has it at the bitrate, else the nearest that has")
    func sampleRates() {
        #expect(MP3Rates.outputSampleRate(for: 44100, bitrate: 128) == 44100)
        #expect(MP3Rates.outputSampleRate(for: 48000, bitrate: 128) == 48000)
        #expect(MP3Rates.outputSampleRate(for: 22050, bitrate: 128) == 22050)
        // MPEG-2 rates stop at 160 kbit/s, MPEG-1 rates start at 32.
        #expect(MP3Rates.outputSampleRate(for: 22050, bitrate: 192) == 32000)
        #expect(MP3Rates.outputSampleRate(for: 44100, bitrate: 8) == 24000)
        #expect(MP3Rates.outputSampleRate(for: 96000, bitrate: 320) == 48000)
    }
}

@Suite("MP3Transcoder without a network")
struct MP3TranscoderTests {
    /// A second of a tone, LAME-encoded at `sampleRate`, as the framer hands it to sinks.
    static func packets(sampleRate: Int) throws -> [Packet] {
        let encoder = try MP3Encoder(sampleRate: sampleRate, channels: 2, bitrate: 64)
        let pcm = ToneGenerator(sampleRate: sampleRate, channels: 2).samples(frequency: 440, toneSeconds: 1)
        var framer = AudioFramer()
        return (framer.push(encoder.encode(interleaved: pcm) + encoder.flush()) + framer.finish()).compactMap {
            if case .packet(let packet) = $0 { packet } else { nil }
        }
    }

    @Test("A station that changes its sample rate: the encoder is flushed and a new one goes on at the new rate, announced by a format event; titles pass in order")
    func formatChange() throws {
        let sink = CollectingSink()
        let transcoder = MP3Transcoder(TranscodeSetting(bitrate: 128)!, downstream: sink, logger: RelayServerTests.logger)
        for packet in try Self.packets(sampleRate: 44100) { try transcoder.receive(.packet(packet)) }
        try transcoder.receive(.metadata(TrackChange(info: TrackInfo(streamTitle: "Next"), position: 0, source: .icy)))
        for packet in try Self.packets(sampleRate: 32000) { try transcoder.receive(.packet(packet)) }
        try transcoder.receive(.ended(.endOfStream))

        #expect(sink.formats.map(\.sampleRate) == [44100, 32000])
        let rates = sink.packets.compactMap { if case .mpeg(let header) = $0.header { header.sampleRate } else { nil } }
        let first = rates.prefix { $0 == 44100 }.count
        #expect(first > 30 && rates.dropFirst(first).allSatisfy { $0 == 32000 } && rates.count - first > 20, "\(rates)")
        #expect(sink.packets.allSatisfy { if case .mpeg(let header) = $0.header { header.bitrate == 128_000 } else { false } })
        // Positions count the MP3 handed on, without a hole.
        let positions = sink.packets.map(\.position)
        #expect(zip(sink.packets, positions.dropFirst()).allSatisfy { $0.position + $0.bytes.count == $1 })
        #expect(sink.titles.map(\.info.raw) == ["Next"])
        #expect(sink.endReason == .endOfStream)
    }
}
