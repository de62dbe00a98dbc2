import Logging

/// swift-log's levels, under the name the command line uses.
package typealias LogLevel = Logger.Level

/// swift-log, set up once per process for a command.
package enum LogSetup {
    /// To stderr, or appended to `file`, at `level`. With a `statusTerminal`, stderr lines are
    /// printed above its status line.
    package static func bootstrap(level: LogLevel, file: FileLogHandler.SharedFile?,
                                 statusTerminal: StatusTerminal? = nil) -> Logger {
        // Log lines carry station text (titles, head fields, reason phrases): made inert here.
        // One format for both destinations (FileLogHandler: logfmt lines with a timestamp); on
        // stderr under a status line, each line is printed above it.
        let destination = file ?? FileLogHandler.SharedFile.standardError()
        LoggingSystem.bootstrap { _ in
            let handler = FileLogHandler(file: destination, level: level)
            if file == nil, let statusTerminal {
                return InertLogHandler(wrapping: StatusAwareLogHandler(inner: handler, terminal: statusTerminal))
            }
            return InertLogHandler(wrapping: handler)
        }
        return Logger(label: "airtap")
    }
}
