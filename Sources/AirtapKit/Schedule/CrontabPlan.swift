import AirtapStations
import AirtapSupport
import FoundationEssentials
import ICYWire
import RecordingRules

/// A station's `schedule` from stations.json, checked: when to start and how long to record.
struct ScheduledRecording: Sendable, Hashable {
    package let stationID: String
    package let cron: CronExpression
    package let duration: DurationSpec

    package init(stationID: String, cron: CronExpression, duration: DurationSpec) {
        self.stationID = stationID
        self.cron = cron
        self.duration = duration
    }

    /// nil when the station has no schedule; a configuration error naming the station when its
    /// schedule is malformed or its id cannot stand in a crontab line.
    package init?(_ station: Station) throws(AirtapError) {
        guard let schedule = station.schedule else { return nil }
        let prefix = "station '\(station.id)': schedule"
        guard !station.id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .configuration("\(prefix): the id has a control character, which a crontab line cannot hold")
        }
        do {
            cron = try CronExpression(schedule.cron)
        } catch {
            throw .configuration("\(prefix): \(error)")
        }
        guard let duration = DurationSpec(parsing: schedule.duration) else {
            throw .configuration("\(prefix): '\(schedule.duration)' is not a duration (90s, 15m, 2h, 1h30m)")
        }
        self.duration = duration
        stationID = station.id
    }

    /// Every scheduled station of the catalog, in file order.
    package static func all(in catalog: StationCatalog) throws(AirtapError) -> [ScheduledRecording] {
        var result: [ScheduledRecording] = []
        for station in catalog.stations {
            if let recording = try ScheduledRecording(station) { result.append(recording) }
        }
        return result
    }
}

/// Turns scheduled recordings into crontab lines, every path absolute because cron runs jobs
/// from the home folder with a minimal environment.
///
/// A line is `CRON /abs/airtap record ID --for D --stations /abs/stations.json --out /abs/dir
/// --log /abs/dir/airtap-ID.log`, with no `cd` and no shell redirection:
/// - absolute `--stations` and `--out` say everything a `cd` would, and do not depend on the
///   folder the user happened to run `schedule` in still existing under the same name;
/// - `--log` gives timestamped lines in a file per station (two stations' jobs may run at once,
///   and a file each keeps their lines apart), while the one-line error of a failed run still
///   reaches stderr, which cron mails to the user: `>> LOG 2>&1` would swallow exactly that;
/// - no variable assignments (`PATH=`, `SHELL=`): in a crontab they apply to every line after
///   them, the user's own lines included.
struct CrontabPlan: Sendable, Hashable {
    package var airtapPath: String
    package var stationsPath: String
    package var outputDirectory: String

    /// Paths must be absolute.
    package init(airtapPath: String, stationsPath: String, outputDirectory: String) {
        self.airtapPath = airtapPath
        self.stationsPath = stationsPath
        self.outputDirectory = outputDirectory
    }

    /// Vixie cron reads at most 1000 bytes of a command and silently runs the truncated rest.
    static let maximumCommandBytes = 999

    /// The lines between the markers: a comment on where they come from, then one line per
    /// recording. Empty when there is nothing to schedule.
    package func lines(for recordings: [ScheduledRecording]) throws(AirtapError) -> [String] {
        guard !recordings.isEmpty else { return [] }
        try checkPaths()
        var lines = ["# From \(stationsPath): edit it, then run 'airtap schedule --install' again."]
        for recording in recordings {
            lines.append(try line(for: recording))
        }
        return lines
    }

    package func line(for recording: ScheduledRecording) throws(AirtapError) -> String {
        try checkPaths()
        let id = recording.stationID
        try Self.checkLineSafe(id, what: "a station id")
        let logName = "airtap-\(SafeFileName.component(id) ?? "station").log"
        let options = [
            "--for", recording.duration.description,
            "--stations", stationsPath,
            "--out", outputDirectory,
            "--log", outputDirectory + "/" + logName,
        ]
        // An id that starts with "-" would read as an option; after "--" it cannot.
        let arguments = id.hasPrefix("-") ? ["record"] + options + ["--", id] : ["record", id] + options
        let command = ([airtapPath] + arguments).map(Self.shellQuoted).joined(separator: " ")
        let escaped = Self.cronEscaped(command)
        guard escaped.utf8.count <= Self.maximumCommandBytes else {
            throw .configuration("station '\(id)': the crontab line would be longer than cron reads (\(Self.maximumCommandBytes + 1) bytes); use shorter paths")
        }
        return "\(recording.cron.text) \(escaped)"
    }

    /// Every path that goes into a line. A newline in one would end the command and start a
    /// line of the attacker's choosing (cron runs it); other control characters have no
    /// business in a crontab either.
    private func checkPaths() throws(AirtapError) {
        try Self.checkLineSafe(airtapPath, what: "the path of airtap")
        try Self.checkLineSafe(stationsPath, what: "the stations file path")
        try Self.checkLineSafe(outputDirectory, what: "the --out folder")
    }

    static func checkLineSafe(_ value: String, what: String) throws(AirtapError) {
        let unsafe = value.unicodeScalars.contains { scalar in
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: true
            default: false
            }
        }
        if unsafe {
            throw .configuration("\(what) has a control character (a newline, say), which a crontab line cannot hold: \(value.debugDescription)")
        }
    }

    /// Single quotes unless the word is plainly safe for sh.
    ///
    /// Inside the quotes every backslash ends a quoted piece (`a\b` becomes `'a\''b'`), so no
    /// backslash in the command stands right before a `%` or another backslash: cron
    /// unescapes `\%` (and some crons `\\`) before the shell sees the command, and a station id
    /// holding `\%` would otherwise reach cron as `\\%`, whose bare `%` cuts the command.
    static func shellQuoted(_ word: String) -> String {
        let plain = !word.isEmpty && word.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "_-./+:,=@".unicodeScalars.contains(scalar))
        }
        guard !plain else { return word }
        var quoted = "'"
        // By scalar: a backslash with a combining mark after it is still a backslash to cron.
        for scalar in word.unicodeScalars {
            switch scalar {
            case "'": quoted += "'\\''"
            case "\\": quoted += "\\''"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "'"
    }

    /// cron turns an unescaped `%` in a command into a newline (and feeds the rest to stdin);
    /// `\%` reaches the shell as a plain `%`, even inside single quotes, since cron unescapes first.
    static func cronEscaped(_ command: String) -> String {
        command.replacingEvery("%", with: "\\%")
    }
}
