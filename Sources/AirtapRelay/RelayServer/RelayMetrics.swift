/// `serve`'s `/metrics`: per station, what a fleet is watched by (see `PrometheusText`).
enum RelayMetrics {
    static func text(_ stations: [(id: String, status: RelayStatus)], connections: RelayDirectory.ConnectionCounters,
                     uptime: Double) -> String {
        var out = PrometheusText()
        func family(_ name: String, _ type: String, _ help: String, _ value: (RelayStatus) -> Double) {
            out.family(name, type: type, help: help, stations.map { ($0.id, value($0.status)) })
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
        out.family("transcoded_info", type: "gauge", help: "1 for a mount served as MP3 (--transcode), with the codec it is transcoded from.",
                   stations.compactMap { station in station.status.transcodedFrom.map { (station.id, $0) } })
        out.family("connections_accepted_total", type: "counter", help: "Connections accepted.", [(nil, Double(connections.accepted))])
        out.family("uptime_seconds", type: "gauge", help: "Seconds since the server started.", [(nil, uptime)])
        return out.text
    }
}
