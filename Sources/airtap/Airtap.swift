import AirtapKit
import ArgumentParser
import Glibc
import ICYWire
import SystemPackage

/// airtap's command line. Exit codes: 0 ok, 1 usage or configuration, 2 network or stream, 3 local I/O.
struct Airtap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "airtap",
        abstract: "Record, play and relay SHOUTcast/Icecast internet radio.",
        discussion: """
            Stations come from stations.json (./stations.json, $XDG_CONFIG_HOME/airtap/stations.json, \
            ~/.config/airtap/stations.json, or --stations FILE); any http(s) URL works too.
            Exit codes: 0 ok, 1 usage or configuration error, 2 network or stream error, 3 local I/O error,
            4 already recording this station (its lock is held).
            """,
        version: AirtapVersion.current,
        subcommands: [RecordCommand.self, ProbeCommand.self, ListCommand.self, ScheduleCommand.self, RelayCommand.self, ServeCommand.self, PlayCommand.self, AddCommand.self, LibraryCommand.self]
    )
}

@main
enum AirtapMain {
    static func main() async {
        // A full disk or a file-size limit must be an error we report (exit 3, files kept),
        // not a signal that kills the process mid-write.
        signal(SIGXFSZ, SIG_IGN)
        // A write to a socket or pipe whose reader went away (an Icecast server that drops the
        // push, a player that quits) must come back as EPIPE, an error the job logs and
        // reconnects after, not kill the process: libshout writes with plain send(), and so does
        // any other library that does not pass MSG_NOSIGNAL.
        signal(SIGPIPE, SIG_IGN)
        // Many stations and listeners need many descriptors; the soft default (1024) is far below
        // what the hard limit allows.
        DescriptorLimit.raiseSoftLimitToHard()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let message = UsageErrors.unknownCommandMessage(arguments: arguments) {
            Terminal.error("airtap: \(message)")
            exit(1)
        }
        do {
            var command = try Airtap.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as AirtapError {
            // Errors quote what a station sent (reason phrases, URLs, content types).
            Terminal.error("airtap: \(InertText.render(error.description))")
            exit(error.exitCode)
        } catch {
            let code = Airtap.exitCode(for: error)
            if code == .success {
                Terminal.output(Airtap.fullMessage(for: error))
                exit(0)
            }
            if let exitCode = error as? ExitCode {
                exit(exitCode.rawValue)
            }
            // Usage errors: ArgumentParser's message as one line with a hint, and our documented
            // exit code 1 instead of its 64.
            Terminal.error(UsageErrors.oneLine(Airtap.message(for: error), arguments: arguments))
            exit(1)
        }
    }
}

/// Writes whole lines straight to the file descriptors (Swift 6: no shared C `FILE *`).
enum Terminal {
    static func output(_ line: String) {
        write(line + "\n", to: STDOUT_FILENO)
    }

    static func error(_ line: String) {
        write(line + "\n", to: STDERR_FILENO)
    }

    /// Without a newline: the status line redraws itself in place.
    static func errorPartial(_ text: String) {
        write(text, to: STDERR_FILENO)
    }

    /// write(2) until all of it is out; on an error (a closed pipe) the rest is dropped.
    static func write(_ text: String, to descriptor: Int32) {
        _ = try? FileDescriptor(rawValue: descriptor).writeAll(text.utf8)
    }
}
