// airtap-bench: in-memory throughput of the ingest path, for `make bench` (tools/bench/).
//
// Builds an ICY stream in memory from the test station's LAME-encoded program (metadata
// every 16000 bytes, a StreamTitle at each track change), then times:
//   parse:  ICYDemuxer + AudioFramer (+ StreamTitle parsing), the ingest thread's work per byte;
//   record: the same, plus TrackRecorder writing one tagged file per track into a folder
//           (pass a RAM folder such as /dev/shm), with no queue in between.
// Prints one JSON object on stdout. Not a test: nothing here runs in `make test`.
import AirtapKit
import Foundation
import ICYWire
import Logging
import TestStation

struct Arguments {
    var megabytes = 256
    var repeats = 5
    var chunk = 16 * 1024
    var recordDirectory: String?

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
            case "--help", "-h":
                print("usage: airtap-bench [--megabytes N] [--repeats N] [--chunk BYTES] [--record-dir DIR]")
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
    while offset < audioTarget {
        let track = program.track(atStreamOffset: offset).index
        if track != lastTrack {
            lastTrack = track
            var text = Array("StreamTitle='\(titles[track])';".utf8)
            let blocks = (text.count + 15) / 16
            text += [UInt8](repeating: 0, count: blocks * 16 - text.count)
            stream.append(UInt8(blocks))
            stream += text
        } else if offset > 0 {
            stream.append(0)
        }
        stream += program.audio(from: offset, count: metaint)
        offset += metaint
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

/// Demux + frame + title parsing over `stream` in `chunk`-byte reads. Returns packets seen.
func parse(_ stream: [UInt8], metaint: Int, chunk: Int, onEvent: ((StreamEvent) -> Void)? = nil) -> (packets: Int, titles: Int) {
    var demuxer = ICYDemuxer(metaint: metaint)
    var framer = AudioFramer()
    var packets = 0
    var titles = 0
    var pending: [TrackChange] = []
    stream.withUnsafeBytes { all in
        var index = 0
        while index < all.count {
            let end = min(index + chunk, all.count)
            demuxer.consume(
                UnsafeRawBufferPointer(rebasing: all[index..<end]),
                onAudio: { audio in
                    framer.push(audio) { event in
                        if case .packet(let packet) = event {
                            packets += 1
                            if let onEvent {
                                while let first = pending.first, first.position <= packet.position {
                                    onEvent(.metadata(first))
                                    pending.removeFirst()
                                }
                                onEvent(.packet(packet))
                            }
                        }
                    }
                },
                onMetadata: { block in
                    if let title = StreamMetadata.parse(block.bytes).streamTitle {
                        titles += 1
                        if onEvent != nil {
                            pending.append(TrackChange(info: TrackInfo(streamTitle: title), position: block.position, source: .icy))
                        }
                    }
                })
            index = end
        }
    }
    framer.finish { _ in }
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
for _ in 0..<arguments.repeats {
    let start = now()
    let result = parse(stream, metaint: metaint, chunk: arguments.chunk)
    parseSeconds.append(now() - start)
    packetCount = result.packets
}
let parseGBps = Double(stream.count) / median(parseSeconds) / 1e9

var output: [String: Any] = [
    "stream_bytes": stream.count,
    "audio_hours": audioSeconds / 3600,
    "chunk_bytes": arguments.chunk,
    "packets": packetCount,
    "repeats": arguments.repeats,
    "parse_seconds": parseSeconds,
    "parse_gb_per_s": parseGBps,
]

if let directory = arguments.recordDirectory {
    var logger = Logger(label: "airtap-bench")
    logger.logLevel = .error
    var recordSeconds: [Double] = []
    var files = 0
    for run in 0..<arguments.repeats {
        let folder = "\(directory)/run\(run)"
        try? FileManager.default.removeItem(atPath: folder)
        let station = Station(adHocURL: "http://127.0.0.1:1/stream")
        let recorder = TrackRecorder(
            station: station, options: RecordingOptions(outputDirectory: folder), logger: logger, stop: { _ in })
        let start = now()
        _ = parse(stream, metaint: metaint, chunk: arguments.chunk) { event in try? recorder.receive(event) }
        try? recorder.receive(.ended(.endOfStream))
        recordSeconds.append(now() - start)
        files = recorder.currentStatus.filesWritten
        try? FileManager.default.removeItem(atPath: folder)
    }
    output["record_seconds"] = recordSeconds
    output["record_gb_per_s"] = Double(stream.count) / median(recordSeconds) / 1e9
    output["record_files"] = files
    output["record_cpu_s_per_audio_hour"] = median(recordSeconds) / (audioSeconds / 3600)
}

let json = try JSONSerialization.data(withJSONObject: output, options: [.sortedKeys])
print(String(decoding: json, as: UTF8.self))
