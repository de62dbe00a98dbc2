import AirtapKit
import AirtapStations
import AirtapSupport
import ArgumentParser

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: [.long, .short], help: ArgumentHelp("The stations file to use.", valueName: "file"))
    var stations: String?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical (default: warning; info for record when not on a terminal or with --log).")
    var logLevel: LogLevel?

    /// The stations file, its warnings (unknown keys) printed to stderr.
    func loadCatalog() throws(AirtapError) -> StationCatalog {
        let catalog = try StationCatalog.load(explicitPath: stations)
        for warning in catalog.warnings { Terminal.error("airtap: warning: \(warning)") }
        return catalog
    }

    /// `--log-level`, else the command's default (`LogSetup.bootstrap` takes it).
    func logLevel(or defaultLevel: LogLevel) -> LogLevel {
        logLevel ?? defaultLevel
    }
}

/// `--log FILE`, for every streaming command: the log lines appended to a file instead of stderr
/// (the same format), reopened on SIGUSR1 for logrotate.
struct LogFileOption: ParsableArguments {
    @Option(name: .customLong("log"), help: ArgumentHelp("Append log lines to this file (kill -USR1 reopens it).", valueName: "file"))
    var path: String?

    /// The open file, or nil for stderr.
    func open() throws(AirtapError) -> FileLogHandler.SharedFile? {
        try path.map { path throws(AirtapError) in try FileLogHandler.SharedFile(appendingTo: path) }
    }

    /// A log file wants every event: info, unless --log-level says otherwise.
    func defaultLevel(_ otherwise: LogLevel) -> LogLevel {
        path == nil ? otherwise : .info
    }
}

/// How streams are requested.
struct ConnectionOptions: ParsableArguments {
    @Option(name: [.long, .customShort("A")], help: ArgumentHelp("User-Agent to send (default \(AirtapVersion.userAgent)).", valueName: "text"))
    var userAgent: String?

    @Option(name: [.customLong("header"), .customShort("H")], help: ArgumentHelp("An extra request header; repeatable.", valueName: "Name: value"))
    var headers: [String] = []

    @Option(name: .long, help: ArgumentHelp("Proxy URL (default: the http_proxy/https_proxy environment).", valueName: "url"))
    var proxy: String?

    @Flag(name: .long, help: "Do not verify TLS certificates.")
    var insecure = false

    @Option(name: .long, help: ArgumentHelp("Seconds to wait for a connection.", valueName: "duration"))
    var connectTimeout: DurationSpec = DurationSpec(seconds: 10)

    @Option(name: .long, help: ArgumentHelp("Seconds without data before a stream counts as stalled.", valueName: "duration"))
    var stallTimeout: DurationSpec = DurationSpec(seconds: 15)

    @Option(name: .long, help: ArgumentHelp("HLS: play the best variant at or under this bitrate (default: the best of all).", valueName: "kbps"))
    var maxBitrate: Int?

    @Option(name: .long, help: ArgumentHelp("Reconnect attempts after a drop, a stall or a failed connect (default: forever; relay to a file or stdout: 0; probe never reconnects).", valueName: "n"))
    var retries: Int?

    func validate() throws {
        if let retries, retries < 0 { throw ValidationError("--retries must be 0 or more") }
        if let maxBitrate, maxBitrate <= 0 { throw ValidationError("--max-bitrate must be a positive number of kbps") }
        for header in headers where !header.contains(":") {
            throw ValidationError("--header '\(header)' is not of the form 'Name: value'")
        }
    }

    /// The kit's value of these options.
    var plan: ConnectionPlan {
        var plan = ConnectionPlan()
        plan.userAgent = userAgent
        plan.headers = headers
        plan.proxy = proxy
        plan.insecure = insecure
        plan.connectTimeout = connectTimeout.seconds
        plan.stallTimeout = stallTimeout.seconds
        plan.retries = retries
        plan.maxBitrateKbps = maxBitrate
        return plan
    }
}

extension DurationSpec: ExpressibleByArgument {
    package init?(argument: String) {
        self.init(parsing: argument)
    }

    package var defaultValueDescription: String { description }
}

extension LogLevel: @retroactive ExpressibleByArgument {}

extension ByteSize: ExpressibleByArgument {
    package init?(argument: String) { self.init(parsing: argument) }
}

extension ClockTime: ExpressibleByArgument {
    package init?(argument: String) { self.init(parsing: argument) }
}

extension Shard: ExpressibleByArgument {
    package init?(argument: String) { self.init(parsing: argument) }
}

extension ListenAddress: ExpressibleByArgument {
    package init?(argument: String) { self.init(parsing: argument) }

    package var defaultValueDescription: String { display(host: host, port: port) }
}

/// `--transcode mp3:BITRATE` of `serve` and `record`.
struct TranscodeOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("Re-encode whatever the station sends as CBR MP3 at this bitrate (stations.json: \"transcode\", for serve).",
                                            valueName: "mp3:bitrate"))
    var transcode: String?

    func validate() throws {
        _ = try setting()
    }

    /// The value, checked: a bitrate MP3 lacks is a usage error, not a failed encoder later.
    func setting() throws -> TranscodeSetting? {
        guard let transcode else { return nil }
        guard let setting = TranscodeSetting(parsing: transcode) else {
            throw ValidationError("--transcode " + TranscodeSetting.problem(with: transcode))
        }
        return setting
    }
}
