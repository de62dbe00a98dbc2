import AirtapCuts
import AirtapIngest
import AirtapKit
import AirtapRecording
import AirtapStations
import AirtapSupport
import CurlSource
import Foundation
import ICYWire
import Locking
import Logging
import SplitFixtures
import TestStation
import Testing

/// Levels made up per stream position, so the aligner's bookkeeping is tested without audio.
package struct ScriptedMeter: FrameLevelMeter {
    package var level: @Sendable (Int) -> Float

    package init(level: @escaping @Sendable (Int) -> Float) {
        self.level = level
    }

    package mutating func measure(priming: ArraySlice<Packet>, frames: ArraySlice<Packet>, into levels: inout [Float]) -> Bool {
        levels = frames.map { level($0.position) }
        return true
    }
}

/// What reached the sink behind the aligner: the files a recorder would write, cut at each title.
package struct SplitOutcome {
    package var events: [StreamEvent]

    package init(events: [StreamEvent]) {
        self.events = events
    }

    package var packets: [Packet] { events.compactMap { if case .packet(let p) = $0 { p } else { nil } } }
    package var titles: [TrackChange] { events.compactMap { if case .metadata(let c) = $0 { c } else { nil } } }
    /// Packet positions between titles: `files[0]` precedes the first title.
    package var files: [[Int]] {
        var files: [[Int]] = [[]]
        for event in events {
            switch event {
            case .packet(let packet): files[files.count - 1].append(packet.position)
            case .metadata: files.append([])
            default: break
            }
        }
        return files
    }
    package func title(_ text: String) -> TrackChange? { titles.first { $0.info.raw == text } }
}

/// The station's bytes for `seconds` of audio, as a client asking for metadata gets them, through
/// the real ingest pipeline (demuxer, framer, title placement): the events a session emits.
package func stationEvents(_ configuration: StationConfiguration, program: StationProgram, seconds: Double) -> [StreamEvent] {
    let count = program.audioByteCount(from: 0, seconds: seconds)
    let rendered = StationTransmission.render(program: program, metaint: configuration.metaint, audioCount: count,
                                              streamURL: "http://x/", metaOffset: configuration.metaOffsetBytes)
    let pipeline = IngestPipeline(metaint: configuration.metaint, charset: .cp1252, logger: Logger(label: "test"))
    var events: [StreamEvent] = []
    rendered.bytes.withUnsafeBytes { pipeline.consume($0) { events.append($0) } }
    pipeline.finish { events.append($0) }
    events.append(.ended(.endOfStream))
    return events
}

/// The program's frames from stream offset 0, with titles placed as the ingest core places them:
/// before the first packet that starts at or after the title's position.
package func programEvents(_ program: StationProgram, frames: Int, titles: [(position: Int, title: String)]) -> [StreamEvent] {
    var events: [StreamEvent] = []
    var pending = titles.sorted { $0.position < $1.position }[...]
    for index in 0..<frames {
        let start = program.streamOffset(ofFrame: index)
        let end = program.streamOffset(ofFrame: index + 1)
        let bytes = program.audio(from: start, count: end - start)
        guard let header = MP3FrameHeader(bytes[...]) else { continue }
        while let first = pending.first, first.position <= start {
            events.append(.metadata(TrackChange(info: TrackInfo(streamTitle: first.title), position: first.position, source: .icy)))
            pending.removeFirst()
        }
        events.append(.packet(Packet(bytes: bytes[...], position: start, header: .mpeg(header))))
    }
    events.append(.ended(.endOfStream))
    return events
}

/// `joinsMidTrack`: the events start inside a track already named, so their first title is a
/// change to search for (the first title of a stream joined cold names what plays, and is not).
package func align(_ events: [StreamEvent], _ options: SplitOptions = .standard, joinsMidTrack: Bool = false,
           meter: sending any FrameLevelMeter = DecodingLevelMeter()) throws -> (SplitOutcome, SplitStatistics) {
    let sink = CollectingSink()
    let aligner = SplitAligner(sink, options: options, logger: Logger(label: "split"), joinsMidTrack: joinsMidTrack, meter: meter)
    for event in events { try aligner.receive(event) }
    return (SplitOutcome(events: sink.all), aligner.statistics)
}

package func encode(_ configuration: StationConfiguration) async throws -> StationProgram {
    try await StationProgram.encoding(configuration)
}

package extension StationProgram {
    var frameSeconds: Double { Double(samplesPerFrame) / Double(sampleRate) }
    /// Playing time before the frame that starts at (or after) stream offset `offset`.
    func seconds(atStreamOffset offset: Int) -> Double { Double(frameIndex(atOrAfter: offset)) * frameSeconds }
    /// Where track `index` starts, in seconds of the first round of the loop.
    func boundarySeconds(ofTrack index: Int) -> Double { seconds(atStreamOffset: tracks[index].startOffset) }
}
