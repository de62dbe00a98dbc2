/// Prometheus' text exposition format (0.0.4), written directly: each metric family once with its
/// HELP and TYPE lines, then one sample per label set. Used by `serve`'s and `record`'s /metrics.
///
/// Written by hand rather than through swift-metrics and swift-prometheus: those keep a
/// process-wide registry (a global that `MetricsSystem.bootstrap` sets once), while airtap's
/// numbers already live in their owners' counters; rendering them on request is a few lines and
/// needs neither a second copy of every counter nor two more packages in every build.
struct PrometheusText {
    package private(set) var text = ""

    package init() {}

    /// One family: `samples` are (station id, value); a nil station writes an unlabelled sample.
    package mutating func family(_ name: String, type: String, help: String, _ samples: [(station: String?, value: Double)]) {
        text += "# HELP airtap_\(name) \(help)\n# TYPE airtap_\(name) \(type)\n"
        for (station, value) in samples {
            let labels = station.map { "{station=\"\(Self.label($0))\"}" } ?? ""
            text += "airtap_\(name)\(labels) \(Self.number(value))\n"
        }
    }

    /// An info family: one sample of value 1 per (station id, `from` label).
    package mutating func family(_ name: String, type: String, help: String, _ samples: [(station: String, from: String)]) {
        text += "# HELP airtap_\(name) \(help)\n# TYPE airtap_\(name) \(type)\n"
        for (station, from) in samples {
            text += "airtap_\(name){station=\"\(Self.label(station))\",from=\"\(Self.label(from))\"} 1\n"
        }
    }

    /// A label value: backslash, double quote and newline escaped, as the format requires.
    package static func label(_ value: String) -> String {
        var result = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
