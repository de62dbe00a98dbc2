/// `/metrics` in Prometheus' text format (version 0.0.4): per station, what a fleet is watched by.
///
/// Written by hand rather than through swift-metrics and swift-prometheus: those keep a
/// process-wide registry (a global that `MetricsSystem.bootstrap` sets once), while these numbers
/// already live in each mount's loop-confined counters; rendering them on request is a few lines
/// and needs neither a second copy of every counter nor two more packages in every build.
enum RelayMetrics {
    static func text(_ stations: [(id: String, status: RelayStatus)], connections: RelayDirectory.ConnectionCounters,
                     uptime: Double) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ value: (RelayStatus) -> Double) {
            out += "# HELP airtap_\(name) \(help)\n# TYPE airtap_\(name) \(type)\n"
            for (id, status) in stations {
                out += "airtap_\(name){station=\"\(label(id))\"} \(number(value(status)))\n"
            }
        }
        family("listeners", "gauge", "Listeners connected now.") { Double($0.listeners) }
        family("listeners_peak", "gauge", "The most listeners at once since the start.") { Double($0.peakListeners) }
        family("listeners_served_total", "counter", "Listeners that started streaming.") { Double($0.listenersServed) }
        family("upstream_up", "gauge", "1 while the upstream streams, else 0.") { $0.upstream == "streaming" ? 1 : 0 }
        family("upstream_reconnects_total", "counter", "Upstream reconnects.") { Double($0.reconnects) }
        family("frames_received_total", "counter", "Audio frames received from the upstream.") { Double($0.packetsReceived) }
        family("audio_bytes_received_total", "counter", "Audio bytes received from the upstream.") { Double($0.audioBytesReceived) }
        family("bytes_relayed_total", "counter", "Bytes written to listeners.") { Double($0.bytesRelayed) }
        family("frames_dropped_total", "counter", "Frames dropped because the relay fell behind its upstream.") { Double($0.droppedPackets) }
        family("listener_skips_total", "counter", "Times a listener fell behind and skipped to the live edge.") { Double($0.skips) }
        family("listener_stalls_total", "counter", "Listeners disconnected because their socket took nothing.") { Double($0.stalledDisconnects) }
        out += "# HELP airtap_connections_accepted_total Connections accepted.\n# TYPE airtap_connections_accepted_total counter\n"
        out += "airtap_connections_accepted_total \(connections.accepted)\n"
        out += "# HELP airtap_uptime_seconds Seconds since the server started.\n# TYPE airtap_uptime_seconds gauge\n"
        out += "airtap_uptime_seconds \(number(uptime))\n"
        return out
    }

    /// A label value: backslash, double quote and newline escaped, as the format requires.
    static func label(_ value: String) -> String {
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

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
