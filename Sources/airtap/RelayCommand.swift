import AirtapKit
import AirtapRelay
import ArgumentParser
import CurlSource
import FoundationEssentials
import Glibc
import Locking

struct RelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relay",
        abstract: "Relay a station's audio frames to a file (with a .cue sheet), to stdout, or to an Icecast server.",
        discussion: """
            Only audio frames are written: no ICY metadata, no ID3 tags, so 'airtap relay demo --to - | mpv -' \
            and '| ffmpeg -i - ...' work. With --to FILE the frames grow in FILE.part (renamed to FILE at the \
            end) and FILE.cue gets a TRACK per title, as with 'record --single'. Ends at --for, at the end \
            of the stream, on Ctrl-C/SIGTERM/SIGHUP, or when the reader of stdout goes away: exit 0. \
            To a file or stdout the relay ends with its stream; with --retries N a dropped stream is \
            reconnected up to N times (spliced: no repeated frames). \
            --to icecast://source@HOST:PORT/MOUNT (or shoutcast://HOST:PORT) sends the stream to your own \
            Icecast (SHOUTcast v1) server as its source, with every title change; the password comes from \
            --password-file or AIRTAP_ICECAST_PASSWORD, never the command line. A push reconnects to the \
            station and to the server forever (with backoff), unless --retries N; it resumes where the \
            stream is now. A first connection that fails (a wrong address or password) ends it at once; \
            with --retries N a station or server not up yet is tried again, a refused login is not.
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var logFile: LogFileOption
    @OptionGroup var connection: ConnectionOptions

    @Argument(help: ArgumentHelp("A station id from stations.json, or a URL.", valueName: "station-or-url"), completion: StationCompletion.kind)
    var station: String

    @Option(name: .long, help: ArgumentHelp("Where the frames go: a file, - for stdout, or icecast://source@HOST:PORT/MOUNT.", valueName: "file|-|url"))
    var to: String

    @Option(name: .long, help: ArgumentHelp("The Icecast source password, in the first line of this file (else AIRTAP_ICECAST_PASSWORD).", valueName: "file"))
    var passwordFile: String?

    @Option(name: [.customLong("for"), .customShort("t")], help: ArgumentHelp("How long to relay (90s, 15m, 2h, 1h30m).", valueName: "duration"))
    var duration: DurationSpec?

    func validate() throws {
        if to.isEmpty { throw ValidationError("--to needs a file name, or - for stdout") }
    }

    func run() async throws {
        if let icecast = try IcecastTarget.parse(to) {
            try await push(to: icecast)
            return
        }
        let target: FileRelay.Target = to == "-" ? .standardOutput : .file(path: to)
        if target == .standardOutput, isatty(STDOUT_FILENO) == 1 {
            throw AirtapError.usage("refusing to write audio to a terminal: pipe it (| mpv -) or use --to FILE")
        }
        let logger = global.makeLogger(defaultLevel: logFile.defaultLevel(.warning), file: try logFile.open())
        let station = try global.loadCatalog().resolve(self.station)
        let loop = try CurlMultiLoop.forCommand(batching: .milliseconds(250))  // as serve: see ServeCommand
        defer { loop.shutdown() }

        let sessionRef = SessionReference()
        let readerLeft = Locked(false)
        let writer = FileRelay.makeSink(target, station: station, logger: logger) { reason in
            if reason == .userRequest { readerLeft.withLock { $0 = true } }
            sessionRef.session?.stop(reason)
        }
        // Like ffmpeg or curl, a relay ends with its stream, unless --retries asks it to reconnect.
        let session = StationSession(station: station, loop: loop,
                                     options: connection.ingestOptions(for: station, reconnects: connection.retries != nil),
                                     sinks: [writer], logger: logger)
        sessionRef.session = session
        let run = StationRun(sessions: [session], loop: loop)
        let reason = await run.run(limit: duration?.seconds)[0]
        run.finish()
        writer.drain()
        // A reader that quit (head -c, a closed player) took what it wanted: no warning for it.
        if writer.droppedPackets > 0, !readerLeft.withLock({ $0 }) {
            logger.warning("the reader fell behind by more than \(FileRelay.stdoutBacklogSeconds) s: \(writer.droppedPackets) packets were not relayed")
        }
        if case .error(let error) = reason { throw error }
    }

    /// `--to icecast://...`: the same session, with a source client as its sink.
    private func push(to target: IcecastTarget) async throws {
        let password = try IcecastTarget.password(file: passwordFile, environment: ProcessInfo.processInfo.environment)
        let logger = global.makeLogger(defaultLevel: logFile.defaultLevel(.warning), file: try logFile.open())
        if let warning = password.warning { logger.warning("\(warning)") }
        let station = try global.loadCatalog().resolve(self.station)
        let loop = try CurlMultiLoop.forCommand(batching: .milliseconds(250))  // as serve: see ServeCommand
        defer { loop.shutdown() }
        let sessionRef = SessionReference()
        let options = pushOptions(for: station)
        let writer = IcecastPush.makeSink(target, password: password.value, userAgent: options.userAgent,
                                          retries: options.reconnect ?? ReconnectPolicy(maxRetries: 0),
                                          logger: logger) { reason in sessionRef.session?.stop(reason) }
        let session = StationSession(station: station, loop: loop, options: options, sinks: [writer], logger: logger)
        sessionRef.session = session
        let run = StationRun(sessions: [session], loop: loop)
        let reason = await run.run(limit: duration?.seconds)[0]
        run.finish()
        writer.drain()
        if case .error(let error) = reason { throw error }
    }

    /// A push feeds a server, as `serve` does: it reconnects to the station, and its policy to the
    /// Icecast server, forever unless --retries N. Without --retries a first connection that fails
    /// (a wrong URL, a wrong password) ends it at once, as for `serve`, rather than leaving it
    /// waiting in silence forever; --retries N bounds the wait, so a station or server that is not
    /// up yet (started beside airtap) is tried again, up to N times, as `record` does. A refused
    /// source login before the mount was ever ours ends it at once either way (IcecastPushMachine).
    func pushOptions(for station: Station) -> IngestOptions {
        var options = connection.ingestOptions(for: station, reconnects: true)
        options.reconnect?.retriesBeforeFirstAudio = connection.retries != nil
        return options
    }
}
