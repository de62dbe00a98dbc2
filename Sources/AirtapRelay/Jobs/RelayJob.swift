import AirtapCuts
import AirtapIngest
import AirtapKit
import AirtapStations
import AirtapSupport
import CurlSource
import FoundationEssentials
import Glibc
import Locking
import Logging

/// Where `relay --to` sends the frames.
package enum RelayDestination: Sendable {
    case file(FileRelay.Target)
    /// Your own Icecast (or SHOUTcast v1) server, as its source.
    case icecast(IcecastTarget, password: IcecastTarget.Password)

    /// `--to`: a file, `-` for stdout, or an icecast:// (shoutcast://) URL whose password comes
    /// from `passwordFile`, else AIRTAP_ICECAST_PASSWORD. Audio is never written to a terminal.
    package static func parse(_ text: String, passwordFile: String?) throws(AirtapError) -> RelayDestination {
        if let icecast = try IcecastTarget.parse(text) {
            let password = try IcecastTarget.password(file: passwordFile, environment: ProcessInfo.processInfo.environment)
            return .icecast(icecast, password: password)
        }
        let target: FileRelay.Target = text == "-" ? .standardOutput : .file(path: text)
        if target == .standardOutput, isatty(STDOUT_FILENO) == 1 {
            throw .usage("refusing to write audio to a terminal: pipe it (| mpv -) or use --to FILE")
        }
        // FILE is written as FILE.part and renamed over a free name: a device, pipe or folder
        // there would get a file beside it (`/dev/null (2)` in /dev) that nobody asked for.
        var status = stat()
        if case .file(let path) = target, stat(path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            throw .usage("--to \(path) is not a regular file: use --to - and redirect standard output there")
        }
        return .file(target)
    }
}

/// `relay`: one station's audio frames to a file, stdout or an Icecast mount.
package struct RelayPlan: Sendable {
    package var station: Station
    package var destination: RelayDestination
    package var connection = ConnectionPlan()
    package var seconds: Double?
    /// Where the station's learned title delay is kept (`TitleDelayJournal`), for a file's cue sheet.
    package var titleDelayFolder: String?
    /// `--transcode`: MP3 re-encoded from what the station sends (to a file or stdout).
    package var transcode: TranscodeSetting?

    package init(station: Station, destination: RelayDestination) {
        self.station = station
        self.destination = destination
    }
}

package struct RelayJob: Sendable {
    package let plan: RelayPlan
    package let logger: Logger

    package init(plan: RelayPlan, logger: Logger) {
        self.plan = plan
        self.logger = logger
    }

    /// Ends at the limit, the end of the stream (unless it reconnects), a signal, or when the
    /// reader of stdout goes away; throws how the stream or the push failed.
    package func run() async throws(AirtapError) {
        switch plan.destination {
        case .file(let target): try await relay(to: target)
        case .icecast(let target, let password): try await push(to: target, password: password)
        }
    }

    /// A push feeds a server, as `serve` does: it reconnects to the station, and its policy to the
    /// Icecast server, forever unless --retries N. Without --retries a first connection that fails
    /// (a wrong URL, a wrong password) ends it at once, as for `serve`, rather than leaving it
    /// waiting in silence forever; --retries N bounds the wait, so a station or server that is not
    /// up yet (started beside airtap) is tried again, up to N times, as `record` does. A refused
    /// source login before the mount was ever ours ends it at once either way (IcecastPushMachine).
    package static func pushOptions(_ connection: ConnectionPlan, for station: Station) -> IngestOptions {
        var options = connection.ingestOptions(for: station, reconnects: true)
        options.reconnect?.retriesBeforeFirstAudio = connection.retries != nil
        // Icecast's listeners hear the source as it comes: a file goes at the pace it plays.
        options.pacesLocalFiles = true
        return options
    }

    private func relay(to target: FileRelay.Target) async throws(AirtapError) {
        let station = plan.station
        let loop = try CurlMultiLoop.forCommand(batching: .milliseconds(250))  // as serve: see ServeJob
        defer { loop.shutdown() }
        let sessions = JobSessions()
        let readerLeft = Locked(false)
        // The writer's failure, kept for the exit: it may come after the stream ended (a short
        // file read to its end before the writer's queue met a full disk), when the session's
        // stop reason is already the stream's end.
        let writeFailure = Locked<AirtapError?>(nil)
        let journal = plan.titleDelayFolder.flatMap { TitleDelayJournal(stationID: station.id, folder: $0) }
        let writer = FileRelay.makeSink(target, station: station, journal: journal, transcode: plan.transcode, logger: logger) { reason in
            switch reason {
            case .userRequest: readerLeft.withLock { $0 = true }
            case .error(let error): writeFailure.withLock { $0 = $0 ?? error }
            default: break
            }
            sessions.stop(station.id, reason)
        }
        // Like ffmpeg or curl, a relay ends with its stream, unless --retries asks it to reconnect.
        let options = plan.connection.ingestOptions(for: station, reconnects: plan.connection.retries != nil)
        let session = sessions.add(StationSources.make(station: station, loop: loop, options: options, sinks: [writer], logger: logger))
        let run = StationRun(sessions: [session], loop: loop)
        let reason = await run.run(limit: plan.seconds)[0]
        run.finish()
        writer.drain()
        // A reader that quit (head -c, a closed player) took what it wanted: no warning for it.
        if writer.droppedPackets > 0, !readerLeft.withLock({ $0 }) {
            logger.warning("the reader fell behind by more than \(FileRelay.stdoutBacklogSeconds) s: \(writer.droppedPackets) packets were not relayed")
        }
        if case .error(let error) = reason { throw error }
        if let failure = writeFailure.withLock({ $0 }) { throw failure }
    }

    /// `--to icecast://...`: the same session, with a source client as its sink.
    private func push(to target: IcecastTarget, password: IcecastTarget.Password) async throws(AirtapError) {
        if let warning = password.warning { logger.warning("\(warning)") }
        let station = plan.station
        let loop = try CurlMultiLoop.forCommand(batching: .milliseconds(250))  // as serve: see ServeJob
        defer { loop.shutdown() }
        let sessions = JobSessions()
        let options = Self.pushOptions(plan.connection, for: station)
        let writer = IcecastPush.makeSink(target, password: password.value, userAgent: options.userAgent,
                                          retries: options.reconnect ?? ReconnectPolicy(maxRetries: 0),
                                          logger: logger, stop: sessions.stopper(for: station.id))
        let session = sessions.add(StationSources.make(station: station, loop: loop, options: options, sinks: [writer], logger: logger))
        let run = StationRun(sessions: [session], loop: loop)
        let reason = await run.run(limit: plan.seconds)[0]
        run.finish()
        writer.drain()
        if case .error(let error) = reason { throw error }
    }
}
