// airtap-bench: in-memory throughput of the ingest path, for `make bench` (tools/bench/).
//
// Builds an ICY stream in memory from the test station's LAME-encoded program (metadata
// every 16000 bytes, a StreamTitle at each track change), then times:
//   parse:  IngestPipeline (ICY demuxer, framer, titles in order), the ingest thread's work per byte;
//   record: the same into the StationRecorder `record --no-silence-search` builds (its queue,
//           then one tagged file per track) in a folder (pass a RAM folder such as /dev/shm).
// Prints one JSON object on stdout. Not a test: nothing here runs in `make test`.
import AirtapCuts
import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations
import Foundation
import ICYWire
import Logging
import TestStation

struct Arguments {
    var megabytes = 256
    var repeats = 5
    var chunk = 16 * 1024
    var recordDirectory: String?
    /// An MP3 or ADTS file: the split search's cost per title change on it, with and without a
    /// title delay (a title every 20 s of audio).
    var splitFile: String?

    init(_ argv: [String]) {
        var i = 1
        func next() -> String {
            i += 1
            guard i < argv.count else { fatalError("missing value for \(argv[i - 1])") }
            return argv[i]
        }
        while i < argv.count {
            switch argv[i] {
            case "--megabytes": megabytes = Int(next()) ?? megabytes
            case "--repeats": repeats = Int(next()) ?? repeats
            case "--chunk": chunk = Int(next()) ?? chunk
            case "--record-dir": recordDirectory = next()
            case "--split-file": splitFile = next()
            case "--help", "-h":
                print("usage: airtap-bench [--megabytes N] [--repeats N] [--chunk BYTES] [--record-dir DIR] [--split-file FILE]")
                exit(0)
            default: fatalError("unknown argument \(argv[i])")
            }
            i += 1
        }
    }
}

/// `megabytes` of ICY stream: the program's loop again and again, metadata every `metaint` bytes.
func buildStream(program: StationProgram, titles: [String], metaint: Int, megabytes: Int) -> (bytes: [UInt8], audio: Int) {
    let audioTarget = megabytes * 1_000_000 * metaint / (metaint + 1)
    var stream: [UInt8] = []
    stream.reserveCapacity(megabytes * 1_000_000 + 65536)
    var offset = 0
    var lastTrack = -1
    // ICY's layout: `metaint` audio bytes, then a block naming the track the next audio byte
    // belongs to (a 0 length byte when it has not changed).
    while offset < audioTarget {
        stream += program.audio(from: offset, count: metaint)
        offset += metaint
        let track = program.track(atStreamOffset: offset).index
        if track != lastTrack {
            lastTrack = track
            var text = Array("StreamTitle='\(titles[track])';".utf8)
            let blocks = (text.count + 15) / 16
            text += [UInt8](repeating: 0, count: blocks * 16 - text.count)
            stream.append(UInt8(blocks))
            stream += text
        } else {
            stream.append(0)
        }
    }
    return (stream, offset)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The ingest pipeline (demuxer, framer, title ordering: what every session runs) over `stream`
/// in `chunk`-byte reads. Returns the packets and titles seen.
func parse(_ stream: [UInt8], metaint: Int, chunk: Int, onEvent: ((StreamEvent) -> Void)? = nil) -> (packets: Int, titles: Int) {
    var logger = Logger(label: "airtap-bench")
    logger.logLevel = .error
    let pipeline = IngestPipeline(metaint: metaint, charset: .utf8, logger: logger)
    var packets = 0
    var titles = 0
    let count: (StreamEvent) -> Void = { event in
        switch event {
        case .packet: packets += 1
        case .metadata: titles += 1
        default: break
        }
        onEvent?(event)
    }
    stream.withUnsafeBytes { all in
        var index = 0
        while index < all.count {
            let end = min(index + chunk, all.count)
            pipeline.consume(UnsafeRawBufferPointer(rebasing: all[index..<end]), emit: count)
            index = end
        }
    }
    pipeline.finish(emit: count)
    return (packets, titles)
}

let arguments = Arguments(CommandLine.arguments)
let metaint = 16000
let titles = (1...8).map { "Bench Artist \($0) - Track number \($0)" }
let configuration = StationConfiguration(metaint: metaint, trackSeconds: 20, titles: titles)
let program: StationProgram
do {
    program = try StationProgram(configuration: configuration)
} catch {
    FileHandle.standardError.write(Data("airtap-bench: \(error)\n".utf8))
    exit(1)
}
let (stream, audioBytes) = buildStream(program: program, titles: titles, metaint: metaint, megabytes: arguments.megabytes)
let audioSeconds = Double(audioBytes) / Double(configuration.bytesPerSecond)

// Warm-up, then timed repeats.
_ = parse(stream, metaint: metaint, chunk: arguments.chunk)
var parseSeconds: [Double] = []
var packetCount = 0
var titleCount = 0
for _ in 0..<arguments.repeats {
    let start = now()
    let result = parse(stream, metaint: metaint, chunk: arguments.chunk)
    parseSeconds.append(now() - start)
    packetCount = result.packets
    titleCount = result.titles
}
let parseGBps = Double(stream.count) / median(parseSeconds) / 1e9

var output: [String: Any] = [
    "stream_bytes": stream.count,
    "audio_hours": audioSeconds / 3600,
    "chunk_bytes": arguments.chunk,
    "packets": packetCount,
    "titles": titleCount,
    "repeats": arguments.repeats,
    "parse_seconds": parseSeconds,
    "parse_gb_per_s": parseGBps,
]

if let directory = arguments.recordDirectory {
    var logger = Logger(label: "airtap-bench")
    logger.logLevel = .error
    /// The record path `record --no-silence-search` builds (the search decodes around every title
    /// and has its own row, make bench's fast rip), without and with ReplayGain, which decodes
    /// every packet for its loudness: the two rows show what the tags cost.
    func recordPath(measuresLoudness: Bool, label: String) -> (seconds: [Double], files: Int) {
        var recordSeconds: [Double] = []
        var files = 0
        for run in 0..<arguments.repeats {
            let folder = "\(directory)/\(label)\(run)"
            try? FileManager.default.removeItem(atPath: folder)
            let station = Station(adHocURL: "http://127.0.0.1:1/stream")
            var plan = RecordingPlan(outputDirectory: folder)
            plan.split.searchesSilence = false
            plan.measuresLoudness = measuresLoudness
            guard let recorder = try? StationRecorder(station: station, plan: plan, logger: logger, stop: { _ in }) else {
                FileHandle.standardError.write(Data("airtap-bench: cannot build the recorder\n".utf8))
                exit(1)
            }
            let start = now()
            _ = parse(stream, metaint: metaint, chunk: arguments.chunk) { event in try? recorder.writer.receive(event) }
            try? recorder.writer.receive(.ended(.endOfStream))
            recorder.writer.drain()
            recordSeconds.append(now() - start)
            files = recorder.tracks?.currentStatus.filesWritten ?? 0
            try? FileManager.default.removeItem(atPath: folder)
        }
        return (recordSeconds, files)
    }
    let plain = recordPath(measuresLoudness: false, label: "plain")
    output["record_seconds"] = plain.seconds
    output["record_gb_per_s"] = Double(stream.count) / median(plain.seconds) / 1e9
    output["record_files"] = plain.files
    output["record_cpu_s_per_audio_hour"] = median(plain.seconds) / (audioSeconds / 3600)
    let gain = recordPath(measuresLoudness: true, label: "gain")
    output["record_replaygain_seconds"] = gain.seconds
    output["record_replaygain_gb_per_s"] = Double(stream.count) / median(gain.seconds) / 1e9
    output["record_replaygain_cpu_s_per_audio_hour"] = median(gain.seconds) / (audioSeconds / 3600)
}

/// Takes every event and keeps none: what the split search costs, without a recorder's.
final class DiscardingSink: StreamSink {
    func receive(_ event: StreamEvent) throws {}
}

/// CPU seconds of this process so far.
func processCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

if let path = arguments.splitFile, let data = FileManager.default.contents(atPath: path) {
    var framer = AudioFramer()
    var events: [StreamEvent] = []
    var clock = 0.0, nextTitle = 20.0, titles = 0
    for case .packet(let packet) in framer.push(Array(data)) + framer.finish() {
        if clock >= nextTitle {
            titles += 1
            nextTitle += 20
            events.append(.metadata(TrackChange(info: TrackInfo(streamTitle: "Bench - \(titles)"), position: packet.position, source: .icy)))
        }
        events.append(.packet(packet))
        clock += packet.duration
    }
    events.append(.ended(.endOfStream))
    var logger = Logger(label: "airtap-bench")
    logger.logLevel = .error
    /// The aligner's CPU per title change, less what it costs to hold and pass the packets on.
    func cost(_ options: SplitOptions) -> Double {
        var best = Double.infinity
        for _ in 0..<arguments.repeats {
            let aligner = SplitAligner(DiscardingSink(), options: options, logger: logger)
            let start = processCPUSeconds()
            for event in events { try? aligner.receive(event) }
            best = min(best, processCPUSeconds() - start)
        }
        return best
    }
    var passing = SplitOptions.standard
    passing.searchesSilence = false
    passing.titleDelay = .off
    passing.paddingNext = 0.001  // not a pass-through: the packets are held and released as by a search
    let base = cost(passing)
    var around = SplitOptions.standard
    around.titleDelay = .off
    var corrected = SplitOptions.standard
    corrected.titleDelay = .fixed(2.5)
    output["split_titles"] = titles
    output["split_audio_seconds"] = clock
    output["split_ms_per_title_around_title"] = (cost(around) - base) / Double(max(titles, 1)) * 1000
    output["split_ms_per_title_with_delay"] = (cost(corrected) - base) / Double(max(titles, 1)) * 1000
    output["split_ms_per_title_learning"] = (cost(.standard) - base) / Double(max(titles, 1)) * 1000
}

let json = try JSONSerialization.data(withJSONObject: output, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
