import AirtapKit
import AirtapSupport
import ArgumentParser

/// airtap's command line. Exit codes: 0 ok, 1 usage or configuration, 2 network or stream, 3 local I/O.
struct Airtap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "airtap",
        abstract: "Record, play and relay SHOUTcast/Icecast internet radio.",
        discussion: """
            Stations come from stations.json (./stations.json, $XDG_CONFIG_HOME/airtap/stations.json, \
            ~/.config/airtap/stations.json, or --stations FILE); any http(s) URL works too, and a local \
            audio file or - (standard input).
            Exit codes: 0 ok, 1 usage or configuration error, 2 network or stream error, 3 local I/O error,
            4 already recording this station (its lock is held).
            """,
        version: AirtapVersion.current,
        subcommands: [RecordCommand.self, ProbeCommand.self, ListCommand.self, ScheduleCommand.self, RelayCommand.self, ServeCommand.self, PlayCommand.self, AddCommand.self, SearchCommand.self, LibraryCommand.self]
    )
}

@main
enum AirtapMain {
    static func main() async {
        CommandProcess.prepare()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let message = UsageErrors.unknownCommandMessage(arguments: arguments) {
            Terminal.error("airtap: \(message)")
            CommandProcess.exit(1)
        }
        do {
            var command = try Airtap.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as AirtapError {
            Terminal.report(error)
            CommandProcess.exit(error.exitCode)
        } catch {
            let code = Airtap.exitCode(for: error)
            if code == .success {
                Terminal.output(Airtap.fullMessage(for: error))
                CommandProcess.exit(0)
            }
            if let exitCode = error as? ExitCode {
                CommandProcess.exit(exitCode.rawValue)
            }
            // Usage errors: ArgumentParser's message as one line with a hint, and our documented
            // exit code 1 instead of its 64.
            Terminal.error(UsageErrors.oneLine(Airtap.message(for: error), arguments: arguments))
            CommandProcess.exit(1)
        }
    }
}
