import ArgumentParser
import Dispatch
import Foundation
import TestStation

/// `airtap-teststation`: the synthetic ICY station as a process, for the demo, benchmarks and
/// tests of the real CLI. Prints `listening 127.0.0.1:<port>` on stdout once ready.
@main
struct TestStationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "airtap-teststation",
        abstract: "Serve looping LAME-encoded sine tones as an ICY (SHOUTcast/Icecast-style) stream on 127.0.0.1.")

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 8765

    @Option(help: "Audio bytes between metadata blocks.")
    var metaint = 16000

    @Option(help: "MP3 bitrate in kbps (CBR).")
    var bitrate = 128

    @Option(help: "Sample rate in Hz.")
    var sampleRate = 44100

    @Option(help: "Channels: 1 (mono) or 2.")
    var channels = 2

    @Option(help: "mp3 (LAME, CBR), aac (AAC LC in ADTS, ffmpeg's aac encoder at about --bitrate), or vorbis / opus (chained Ogg with a new link per title, encoded with ffmpeg at start-up).")
    var codec: StationCodec = .mp3

    @Option(help: ArgumentHelp("Ogg: send each track as links of this many seconds (a hostile station starting a new link every few pages).",
                               valueName: "seconds"))
    var oggLinkSeconds: Double?

    @Flag(help: "Ogg: put an Ogg Skeleton stream beside every link.")
    var oggSkeleton = false

    @Option(help: "Seconds of tone per track.")
    var trackSeconds = 10.0

    @Option(help: "Seconds of digital silence after each track.")
    var gapSeconds = 0.0

    @Option(help: ArgumentHelp("Gaps of the first tracks, comma-separated (later tracks get --gap-seconds).", valueName: "s,s,..."))
    var gapSecondsPerTrack: String?

    @Option(help: "Each tone fades out linearly over its last this-many seconds, before its gap.")
    var fadeOutSeconds = 0.0

    @Option(help: ArgumentHelp("A quiet (not silent) stretch in every tone: seconds into the tone, length, RMS level (e.g. 4:1:-30).", valueName: "start:length:dBFS"))
    var quietPassage: String?

    @Option(help: ArgumentHelp("Announce titles this long after each track boundary (negative: early).", valueName: "ms"))
    var metaOffset = 0

    @Flag(help: "Send titles with NUL, C0/C1 controls, ESC sequences, broken UTF-8, \"';\" inside the value, and one of 4080 bytes.")
    var hostileTitles = false

    @Flag(help: "Send at the nominal bitrate (default) or as fast as clients read.")
    var pace: StationConfiguration.Pace = .realtime

    @Flag(help: "Answer streams with 'ICY 200 OK' like a SHOUTcast v1 server.")
    var v1 = false

    @Option(help: ArgumentHelp("File with one track title per line (UTF-8; empty lines ignored).", valueName: "file"))
    var titles: String?

    @Option(help: "End each connection after this many seconds of audio (on a frame boundary): a drop.")
    var maxSeconds: Double?

    @Option(help: ArgumentHelp("Realtime only: stop sending for --stall-seconds after this many seconds of each connection.",
                               valueName: "seconds"))
    var stallAfter: Double?

    @Option(help: ArgumentHelp("How long the stall of --stall-after lasts.", valueName: "seconds"))
    var stallSeconds: Double = 20

    @Option(help: "Station name (icy-name).")
    var name = StationConfiguration().name

    @Flag(help: "In realtime mode, start every client at the beginning of the loop instead of the live position.")
    var fromStart = false

    @Option(help: ArgumentHelp("Also serve the station as HLS under /hls/ (master.m3u8, BITRATEk/index.m3u8): packed-audio (.aac/.mp3 with timed ID3), mpegts (with a timed-ID3 stream) or fmp4 (init.mp4, emsg timed ID3). MP3 and AAC only.", valueName: "container"))
    var hls: HLSPackager.Container?

    @Option(help: ArgumentHelp("HLS: where the titles go: timed-id3 (every segment), timed-id3-on-change (where a track starts), playlist-attributes (title=\"...\",artist=\"...\") or playlist-artist-title.", valueName: "placement"))
    var hlsTitles: HLSPackager.TitlePlacement = .timedID3

    @Option(help: "HLS: seconds per segment.")
    var hlsSegmentSeconds = 2.0

    @Flag(help: "HLS: one loop as a VOD playlist (with ENDLIST) instead of a live sliding window.")
    var hlsVod = false

    @Option(help: ArgumentHelp("HLS: a second variant at this bitrate in the master playlist.", valueName: "kbps"))
    var hlsLowBitrate: Int?

    @Flag(help: "HLS: encrypt the segments with AES-128 (#EXT-X-KEY, key at VARIANT/key, IV from the media sequence number).")
    var hlsAes128 = false

    func stationConfiguration() throws -> StationConfiguration {
        var configuration = StationConfiguration(
            port: port, metaint: metaint, bitrate: bitrate, sampleRate: sampleRate, trackSeconds: trackSeconds,
            gapSeconds: gapSeconds, pace: pace, style: v1 ? .shoutcastV1 : .http10, maxSeconds: maxSeconds,
            name: name, startAtLive: pace == .realtime && !fromStart)
        configuration.fadeOutSeconds = fadeOutSeconds
        guard (1...2).contains(channels) else { throw ValidationError("--channels takes 1 or 2") }
        configuration.channels = channels
        configuration.codec = codec
        configuration.oggLinkSeconds = oggLinkSeconds
        configuration.oggSkeleton = oggSkeleton
        if let stallAfter {
            guard pace == .realtime else { throw ValidationError("--stall-after needs --realtime") }
            configuration.stall = .init(afterSeconds: stallAfter, seconds: stallSeconds)
        }
        configuration.metaOffsetSeconds = Double(metaOffset) / 1000
        configuration.hostileTitles = hostileTitles
        if let gapSecondsPerTrack {
            configuration.gapSecondsPerTrack = try gapSecondsPerTrack.split(separator: ",").map { item in
                guard let value = Double(item.trimmingCharacters(in: .whitespaces)) else {
                    throw ValidationError("--gap-seconds-per-track: '\(item)' is not a number of seconds")
                }
                return value
            }
        }
        if let quietPassage {
            let parts = quietPassage.split(separator: ":", omittingEmptySubsequences: false).map { Double($0) }
            guard parts.count == 3, let start = parts[0], let length = parts[1], let level = parts[2] else {
                throw ValidationError("--quiet-passage takes start:length:dBFS, e.g. 4:1:-30")
            }
            configuration.quietPassage = .init(startSeconds: start, seconds: length, levelDBFS: level)
        }
        if let titles {
            guard let data = FileManager.default.contents(atPath: titles) else {
                throw ValidationError("cannot read titles file \(titles)")
            }
            guard let text = String(data: data, encoding: .utf8) else {
                throw ValidationError("titles file \(titles) is not UTF-8")
            }
            configuration.titles = text.split(whereSeparator: \.isNewline)
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
        try configuration.validate()
        return configuration
    }

    func run() async throws {
        let configuration = try stationConfiguration()
        var program: StationProgram?
        var site: HLSSite?
        if let hls {
            // The ICY stream and the first HLS variant share one encoding.
            let main = try StationProgram(configuration: configuration)
            program = main
            var programs = [(program: main, bitrate: configuration.bitrate)]
            if let hlsLowBitrate {
                var low = configuration
                low.bitrate = hlsLowBitrate
                programs.append((try StationProgram(configuration: low), hlsLowBitrate))
            }
            site = try HLSSite.make(programs: programs, codec: configuration.codec, container: hls, titles: hlsTitles,
                                    segmentSeconds: hlsSegmentSeconds, isVOD: hlsVod, isEncrypted: hlsAes128)
        }
        let server = try await TestStationServer.start(configuration, program: program, hls: site, log: { line in
            FileHandle.standardError.write(Data("airtap-teststation: \(line)\n".utf8))
        })
        // Unbuffered write(2): the parent reading our stdout sees the line at once.
        FileHandle.standardOutput.write(Data("listening \(configuration.host):\(server.port)\n".utf8))
        let signal = await Self.nextTerminationSignal()
        FileHandle.standardError.write(Data("airtap-teststation: signal \(signal), stopping\n".utf8))
        try await server.stop()
    }

    /// Waits for SIGINT or SIGTERM. The default actions are ignored first so the signal reaches
    /// the dispatch source instead of killing the process.
    static func nextTerminationSignal() async -> Int32 {
        let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
        let queue = DispatchQueue(label: "airtap-teststation.signals")
        let sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
        defer { sources.forEach { $0.cancel() } }
        for await number in signals { return number }
        return SIGTERM
    }

    /// Errors leave as one line and exit code 1 (ArgumentParser would print usage and exit 64).
    static func main() async {
        // A listener that hangs up mid-write must cost only its connection. SwiftNIO ignores
        // SIGPIPE once it opens its first socket; this makes it so before any I/O, whatever
        // the process inherited.
        signal(SIGPIPE, SIG_IGN)
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .success {
                exit(withError: error)  // --help and friends
            }
            let message = message(for: error).split(whereSeparator: \.isNewline).first.map(String.init) ?? "\(error)"
            FileHandle.standardError.write(Data("airtap-teststation: \(message)\n".utf8))
            Foundation.exit(1)
        }
    }
}

extension StationConfiguration.Pace: EnumerableFlag {
    package static func name(for value: Self) -> NameSpecification { .long }
}

extension StationCodec: ExpressibleByArgument {}
extension HLSPackager.Container: ExpressibleByArgument {}
extension HLSPackager.TitlePlacement: ExpressibleByArgument {}
