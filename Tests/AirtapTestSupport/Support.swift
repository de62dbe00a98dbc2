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
import TestStation

/// Collects every event a session emits, for assertions after it stopped.
package final class CollectingSink: StreamSink {
    private let events = Locked<[StreamEvent]>([])
    private let end = Locked<ContinuousClock.Instant?>(nil)

    package init() {}

    package func receive(_ event: StreamEvent) throws {
        if case .ended = event { end.withLock { $0 = .now } }
        events.withLock { $0.append(event) }
    }

    /// When the end reached the sink, read on the session's own thread: a test task that resumes
    /// late on a busy machine does not stretch it.
    package var endedAt: ContinuousClock.Instant? { end.withLock { $0 } }

    package var all: [StreamEvent] { events.withLock { $0 } }

    package var heads: [StreamHead] { all.compactMap { if case .head(let head) = $0 { head } else { nil } } }
    package var formats: [AudioFrameHeader] { all.compactMap { if case .format(let header) = $0 { header } else { nil } } }
    package var packets: [Packet] { all.compactMap { if case .packet(let packet) = $0 { packet } else { nil } } }
    package var titles: [TrackChange] { all.compactMap { if case .metadata(let change) = $0 { change } else { nil } } }
    package var states: [ConnectionState] { all.compactMap { if case .connection(let state) = $0 { state } else { nil } } }
    package var audio: [UInt8] { packets.flatMap(\.bytes) }

    package var endReason: StopReason? {
        if case .ended(let reason) = all.last { reason } else { nil }
    }
}

/// The files a recorder finished, in order, as its `RecordingOptions.onFileWritten` reports them
/// (the recorder itself keeps no record of them).
package final class FinishedTracks: Sendable {
    private let tracks = Locked<[RecordedTrack]>([])

    package init() {}

    package var all: [RecordedTrack] { tracks.withLock { $0 } }

    /// `options` reporting here too (after its own `onFileWritten`, if any).
    package func collecting(_ options: RecordingOptions) -> RecordingOptions {
        var options = options
        let reported = options.onFileWritten
        options.onFileWritten = { [tracks] track in
            reported?(track)
            tracks.withLock { $0.append(track) }
        }
        return options
    }
}

/// Programs are encoded once per configuration and shared by the tests (LAME takes a moment).
package enum Programs {
    package static let short: StationProgram = {
        do {
            return try StationProgram(configuration: StationConfiguration(trackSeconds: 3))
        } catch {
            fatalError("the test station cannot encode its program: \(error)")
        }
    }()

    package static func configuration(_ style: StationConfiguration.Style = .http10, maxSeconds: Double = 14) -> StationConfiguration {
        StationConfiguration(metaint: 8000, trackSeconds: 3, pace: .fast, style: style, maxSeconds: maxSeconds)
    }
}

/// Starts a fast test station on 127.0.0.1, runs `body`, stops the station.
/// `program`: what the station plays (default: the short program, whatever the configuration's titles).
package func withStation<T>(_ configuration: StationConfiguration = Programs.configuration(), program: StationProgram = Programs.short,
                    _ body: (TestStationServer) async throws -> T) async throws -> T {
    let server = try await TestStationServer.start(configuration, program: program)
    do {
        let result = try await body(server)
        try await server.stop()
        return result
    } catch {
        try? await server.stop()
        throw error
    }
}

/// Runs one session to its end against `urls` and returns what it emitted: stopped after
/// `seconds`, or once `stopCondition` holds of what arrived.
package func ingest(_ urls: [String], stopAfter seconds: Double? = nil,
            stopOnce stopCondition: (@Sendable (CollectingSink) -> Bool)? = nil) async -> CollectingSink {
    let loop = CurlMultiLoop()
    defer { loop.shutdown() }
    let sink = CollectingSink()
    let station = Station(id: "test", name: "Test", urls: urls)
    // Timeouts are not under test here: 30 s leave room for a loaded machine's slow turns.
    let session = StationSession(station: station, loop: loop, options: IngestOptions(connectTimeout: 30, stallTimeout: 30),
                                 sinks: [sink], logger: Logger(label: "test"))
    session.start()
    if let stopCondition {
        // Past waitFor's deadline the session stops all the same; the test's expectations say what was missing.
        try? await waitFor("the condition to stop on") { stopCondition(sink) }
        session.stop(.limitReached)
    } else {
        session.stop(.limitReached, after: seconds ?? 60)
    }
    await reportStall(await session.stopped(), url: urls[0])
    return sink
}

/// The titles a station announced to a client, with their byte offsets, for `audioCount` bytes.
package func announcedTitles(_ server: TestStationServer, audioCount: Int) -> [StationTransmission.TitleEvent] {
    StationTransmission.render(program: server.program, metaint: server.configuration.metaint,
                               audioCount: audioCount, streamURL: server.streamURL).titles
}

/// When an in-process session ended in curl's stall check: prints what the kernel says of every TCP
/// socket on the station's port (state, queues, inode, owning processes), to tell an end of stream
/// never sent (the station's socket still open somewhere) from one never read.
package func reportStall(_ reason: StopReason?, url: String) async {
    guard let reason, "\(reason)".contains("Operation too slow"), let port = URL(string: url)?.port else { return }
    let report = (try? await toolOutput("/usr/bin/ss", ["-tanpoe", "sport = :\(port) or dport = :\(port)"])) ?? "(ss could not run)"
    print("stalled session on port \(port) (\(reason)); sockets:\n\(report)")
}

package struct Unreadable: Error, CustomStringConvertible {
    package let text: String

    package init(text: String) {
        self.text = text
    }
    package var description: String { "cannot read: \(text.suffix(800))" }
}

/// A tool's standard output (or, `readingErrors`, its standard error), run to its end on a thread
/// of its own; a non-zero exit throws what it printed.
package func toolOutput(_ tool: String, _ arguments: [String], readingErrors: Bool = false) async throws -> String {
    try await onOwnThread {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let output = ChildProcesses.pipe()
        if readingErrors {
            process.standardError = output
            process.standardOutput = FileHandle.nullDevice
        } else {
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
        }
        try ChildProcesses.spawn(process)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Unreadable(text: text) }
        return text
    }
}

/// ffmpeg, quiet and never reading stdin, with `arguments` after those flags, in `folder` (where
/// its relative paths land). Blocks until it exits: call it on a thread of its own.
package func runFFmpeg(_ arguments: [String], in folder: URL? = nil) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    process.arguments = ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"] + arguments
    process.currentDirectoryURL = folder
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try ChildProcesses.spawn(process)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw FFmpegFailure(arguments: arguments) }
}

package struct FFmpegFailure: Error, CustomStringConvertible {
    package let arguments: [String]
    package var description: String { "ffmpeg failed: " + arguments.joined(separator: " ") }
}

/// A port on 127.0.0.1 bound and never listened on while this lives (keep it alive to the end of
/// its use with `withExtendedLifetime`): a connection there is refused at once. A server started
/// and stopped leaves a port that another test's server may take meanwhile, and answer.
package final class RefusingPort {
    private let descriptor: Int32
    package let port: UInt16

    package init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            if descriptor >= 0 { close(descriptor) }
            throw RefusingPortError()
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }

    /// `http://127.0.0.1:PORT`.
    package var url: String { "http://127.0.0.1:\(port)" }
}

package struct RefusingPortError: Error, CustomStringConvertible {
    package var description: String { "cannot bind a port on 127.0.0.1" }
}
