import FoundationEssentials
import Glibc
import ICYWire
import Locking

/// One line of `--json` output, the same schema for every command (README "Machine-readable
/// output"): `{"time": RFC 3339 UTC, "event": name, "station": id, ...}`, fields in snake_case,
/// named with their unit (`bitrate_kbps`, `seconds`, `bytes`). Absent values are left out.
package struct MachineEvent: Sendable, Equatable {
    package let name: String
    package let fields: [Field]

    package struct Field: Sendable, Equatable {
        package let key: String
        package let value: JSONValue
    }

    package init(_ name: String, _ fields: [(String, JSONValue?)]) {
        self.name = name
        self.fields = fields.compactMap { key, value in value.map { Field(key: key, value: $0) } }
    }

    /// The JSON object, `time` and `event` first, then the fields in their order.
    package func line(time: String) -> String {
        let members = [("time", JSONValue.string(time)), ("event", .string(name))] + fields.map { ($0.key, $0.value) }
        return "{" + members.map { JSONValue.quoted($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
    }
}

/// The values `--json` lines hold.
package enum JSONValue: Sendable, Equatable {
    case string(String)
    case int(Int)
    /// Rounded to milliseconds: enough for stream times, stable to read.
    case number(Double)
    case bool(Bool)
    case strings([String])

    var text: String {
        switch self {
        case .string(let text): return Self.quoted(text)
        case .int(let value): return String(value)
        case .number(let value):
            guard value.isFinite else { return "null" }
            let rounded = (value * 1000).rounded() / 1000
            return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int(rounded)) : String(rounded)
        case .bool(let value): return value ? "true" : "false"
        case .strings(let list): return "[" + list.map(Self.quoted).joined(separator: ",") + "]"
        }
    }

    /// A JSON string literal: quotes, backslashes and every control character escaped, so a
    /// station's text can never break a line or the object.
    package static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case let control where control.value < 0x20 || (0x7F...0x9F).contains(control.value)
                || control.value == 0x2028 || control.value == 0x2029:
                let hex = String(control.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// Writes `--json` lines to stdout (or anywhere), one whole line per write, from any thread.
package final class MachineEventWriter: Sendable {
    private let write: @Sendable (String) -> Void
    private let now: @Sendable () -> String
    /// Lines come from the ingest, writer and signal threads: one at a time, never interleaved.
    private let lock = Locked(())

    package init(write: @escaping @Sendable (String) -> Void, now: @escaping @Sendable () -> String = MachineEventWriter.rfc3339Now) {
        self.write = write
        self.now = now
    }

    package func emit(_ event: MachineEvent) {
        lock.withLock { _ in write(event.line(time: now())) }
    }

    /// The current time as RFC 3339 in UTC with milliseconds: `2026-11-23T21:33:03.123Z`.
    package static func rfc3339Now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return rfc3339(seconds: Int(spec.tv_sec), milliseconds: Int(spec.tv_nsec) / 1_000_000)
    }

    static func rfc3339(seconds: Int, milliseconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { Int(value).zeroPadded(width: 2) }
        return "\(Int(parts.tm_year) + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(milliseconds.zeroPadded(width: 3))Z"
    }
}
