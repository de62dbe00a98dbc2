import AirtapSupport
import ICYWire

/// `search`'s rows: NAME, CODEC, KBPS, COUNTRY, TAGS, UUID, aligned. Every cell is inert (the
/// directory's text can hold escape sequences) and cut to a width, so one station cannot push
/// the others off the screen.
package struct DirectoryTable {
    package let rows: [[String]]

    static let maxNameBytes = 48
    static let maxTagsBytes = 40

    package init(_ stations: [DirectoryStation]) {
        let header = ["NAME", "CODEC", "KBPS", "COUNTRY", "TAGS", "UUID"]
        rows = [header] + stations.map { station in
            let cells = [
                InertText.render(station.name, maxUTF8Bytes: Self.maxNameBytes),
                InertText.render(station.codec ?? "", maxUTF8Bytes: 12),
                station.bitrateKbps.map { $0 > 0 ? String($0) : "" } ?? "",
                InertText.render(station.countryCode ?? station.country ?? "", maxUTF8Bytes: 24),
                InertText.render(station.tags.joined(separator: ","), maxUTF8Bytes: Self.maxTagsBytes),
                station.uuid,
            ]
            return cells
        }
    }

    /// Every column as wide as its widest cell, two spaces apart; no trailing spaces.
    package var lines: [String] {
        let columns = rows.first?.count ?? 0
        let widths = (0..<columns).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                line += column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }
            while line.last == " " { line.removeLast() }
            return line
        }
    }
}

extension MachineEvent {
    /// `search --json`: one per station. Its text is escaped as JSON strings, never cut.
    package static func directoryStation(_ station: DirectoryStation) -> MachineEvent {
        MachineEvent("directory_station", [
            ("uuid", .string(station.uuid)), ("name", .string(station.name)),
            ("codec", station.codec.map(JSONValue.string)), ("bitrate_kbps", station.bitrateKbps.map(JSONValue.int)),
            ("country", station.country.map(JSONValue.string)), ("country_code", station.countryCode.map(JSONValue.string)),
            ("tags", .strings(station.tags)), ("url", station.streamURL.map(JSONValue.string)),
            ("homepage", station.homepage.map(JSONValue.string)), ("hls", .bool(station.isHLS)),
            ("last_check_ok", station.lastCheckOK.map(JSONValue.bool)), ("clicks", station.clickCount.map(JSONValue.int)),
            ("votes", station.votes.map(JSONValue.int)),
        ])
    }
}
