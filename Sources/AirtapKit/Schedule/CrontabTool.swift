import AirtapSupport
import FoundationEssentials

/// crontab(1), or the script `AIRTAP_CRONTAB` names instead (tests keep the table in a file).
/// Reads with `crontab -l`, writes with `crontab -`.
struct CrontabTool: Sendable, Hashable {
    package let executable: String

    package init(executable: String) {
        self.executable = executable
    }

    /// `AIRTAP_CRONTAB` when set, else `crontab` from `PATH`.
    package static func resolve(environment: [String: String]) throws(AirtapError) -> CrontabTool {
        if let override = environment["AIRTAP_CRONTAB"], !override.isEmpty {
            return CrontabTool(executable: override)
        }
        let path = environment["PATH"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = String(folder) + "/crontab"
            if FileManager.default.isExecutableFile(atPath: candidate) { return CrontabTool(executable: candidate) }
        }
        throw .localIO("crontab not found on PATH (install cron), or run 'airtap schedule' without --install and add the lines yourself")
    }

    /// The current table; empty when the user has none yet (crontab then says "no crontab for
    /// USER" and exits 1, which is not a failure).
    package func read() throws(AirtapError) -> String {
        let result = try run(["-l"], input: nil)
        if result.status == 1, result.stderr.lowercased().contains("no crontab") { return "" }
        guard result.status == 0 else { throw failure("-l", result) }
        // Refuse to round-trip what cannot be kept byte for byte.
        guard let table = String(validating: result.stdout, as: UTF8.self) else {
            throw .localIO("your crontab is not valid UTF-8; airtap will not rewrite it (add the lines from 'airtap schedule' yourself)")
        }
        return table
    }

    package func write(_ table: String) throws(AirtapError) {
        let result = try run(["-"], input: Data(table.utf8))
        guard result.status == 0 else { throw failure("-", result) }
    }

    private struct Outcome {
        let status: Int32
        let stdout: Data
        let stderr: String
    }

    /// Runs the tool with files, not pipes, for its input and output: nothing to deadlock on
    /// when it writes more than a pipe holds before reading its input.
    private func run(_ arguments: [String], input: Data?) throws(AirtapError) -> Outcome {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-crontab-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        do {
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            let inputURL = scratch.appendingPathComponent("in")
            let outputURL = scratch.appendingPathComponent("out")
            let errorURL = scratch.appendingPathComponent("err")
            try (input ?? Data()).write(to: inputURL)

            let child = try ChildProcess.spawn(
                executable, arguments: [executable] + arguments, environment: ProcessInfo.processInfo.environment,
                stdin: .file(inputURL.path), stdout: .file(outputURL.path), stderr: .file(errorURL.path))
            let termination = child.wait()
            return Outcome(status: termination.status,
                           stdout: try Data(contentsOf: outputURL),
                           stderr: String(decoding: try Data(contentsOf: errorURL), as: UTF8.self))
        } catch {
            throw .localIO("cannot run \(executable): \(describeSystemError(error))")
        }
    }

    private func failure(_ argument: String, _ outcome: Outcome) -> AirtapError {
        let message = outcome.stderr.split(separator: "\n").first.map(String.init) ?? "no message"
        return .localIO("\(executable) \(argument) failed with status \(outcome.status): \(message)")
    }
}
