import AirtapIngest
import AirtapRecording
import AirtapStations
import AirtapSupport
import ICYWire
import Locking

// MARK: The events

extension MachineEvent {
    package static func head(_ head: StreamHead, station: Station) -> MachineEvent {
        let response = head.response
        var metaint: Int?
        if case .interval(let bytes) = response.metaint { metaint = bytes }
        return MachineEvent("head", [
            ("station", .string(station.id)), ("url", .string(URLCredentials.redacted(head.url))),
            ("protocol", .string(response.protocolName)), ("status", .int(response.statusCode)),
            ("reason", .string(response.reason)),
            // Station text: the one call site for the shared sanitizer of station text.
            ("name", response.icyName.map(JSONValue.string)), ("genre", response.icyGenre.map(JSONValue.string)),
            ("icy_url", response.icyURL.map(JSONValue.string)), ("description", response.icyDescription.map(JSONValue.string)),
            ("bitrate_kbps", response.icyBitrate.map(JSONValue.int)), ("metaint_bytes", metaint.map(JSONValue.int)),
            ("content_type", response.contentType.map(JSONValue.string)), ("server", response.server.map(JSONValue.string)),
            ("public", response.isPublic.map(JSONValue.bool)),
            ("transport", head.hls == nil ? nil : .string("hls")),
            ("hls_live", head.hls.map { .bool($0.isLive) }), ("hls_container", head.hls.map { .string($0.container) }),
            ("hls_segment_seconds", head.hls.map { .int($0.targetDuration) }),
            ("hls_behind_live_edge_seconds", head.hls.map { .number($0.secondsBehindLiveEdge) }),
            ("hls_variant_bandwidths", head.hls.flatMap { $0.variants.isEmpty ? nil : .strings($0.variants.map { "\($0.bandwidth)" }) }),
            ("hls_chosen_bandwidth", head.hls.flatMap { hls in hls.chosenVariant.map { .int(hls.variants[$0].bandwidth) } }),
        ])
    }

    package static func format(_ header: AudioFrameHeader, station: Station) -> MachineEvent {
        MachineEvent("format", [
            ("station", .string(station.id)), ("codec", .string(header.codec.rawValue)),
            ("bitrate_kbps", header.bitrate.map { .int($0 / 1000) }), ("sample_rate_hz", .int(header.sampleRate)),
            ("channels", .int(header.channels)),
        ])
    }

    package static func title(_ change: TrackChange, streamSeconds: Double, station: Station) -> MachineEvent {
        MachineEvent("title", [
            ("station", .string(station.id)),
            // Station text: the one call site for the shared sanitizer of station text.
            ("raw", .string(change.info.raw)), ("artist", change.info.artist.map(JSONValue.string)),
            ("title", .string(change.info.title)), ("url", change.info.url.map(JSONValue.string)),
            ("position_bytes", .int(change.position)), ("source", .string(change.source.rawValue)),
            ("stream_seconds", .number(streamSeconds)),
        ])
    }

    package static func discontinuity(at position: Int, station: Station) -> MachineEvent {
        MachineEvent("discontinuity", [("station", .string(station.id)), ("position_bytes", .int(position))])
    }

    package static func reconnect(attempt: Int, afterSeconds: Double, reason: String, station: Station) -> MachineEvent {
        MachineEvent("reconnect", [
            ("station", .string(station.id)), ("attempt", .int(attempt)), ("after_seconds", .number(afterSeconds)),
            ("reason", .string(reason)),
        ])
    }

    package static func file(_ track: RecordedTrack, station: Station) -> MachineEvent {
        MachineEvent("file", [
            ("station", .string(station.id)), ("path", .string(track.path)), ("complete", .bool(track.isComplete)),
            ("artist", track.info?.artist.map(JSONValue.string)), ("title", track.info.map { .string($0.title) }),
            ("seconds", .number(track.seconds)), ("audio_bytes", .int(track.audioByteCount)), ("frames", .int(track.frameCount)),
            // Where its start was cut: by what, how far from where the title arrived (negative:
            // before it), and the station's title delay the search corrected by.
            ("cut_by", track.cut.map { .string($0.reason.rawValue) }),
            ("cut_from_title_seconds", track.cut.map { .number(($0.shiftSeconds * 1000).rounded() / 1000) }),
            ("title_delay_seconds", track.cut?.titleDelaySeconds.map { .number(($0 * 1000).rounded() / 1000) }),
        ])
    }

    /// The end of a station's stream: why, after how long, and for an error its message and
    /// the exit code it leads to.
    package static func stop(_ reason: StopReason, seconds: Double, station: Station) -> MachineEvent {
        var error: AirtapError?
        let name: String
        switch reason {
        case .endOfStream: name = "end_of_stream"
        case .userRequest: name = "user_request"
        case .limitReached: name = "limit_reached"
        case .error(let failure): name = "error"; error = failure
        }
        return MachineEvent("stop", [
            ("station", .string(station.id)), ("reason", .string(name)), ("error", error.map { .string($0.description) }),
            ("exit_code", error.map { .int(Int($0.exitCode)) }), ("seconds", .number(seconds)),
        ])
    }

    package static func listening(address: String, url: String, station: Station) -> MachineEvent {
        MachineEvent("listening", [("station", .string(station.id)), ("address", .string(address)), ("url", .string(url))])
    }

    package static func station(_ station: Station) -> MachineEvent {
        MachineEvent("station", [
            ("station", .string(station.id)), ("name", .string(station.name)),
            // Credentials in a station URL are never shown.
            ("urls", .strings(station.urls.map(URLCredentials.redacted))),
            ("charset", station.charset.map(JSONValue.string)),
            ("schedule_cron", station.schedule.map { .string($0.cron) }),
            ("schedule_duration", station.schedule.map { .string($0.duration) }),
            ("genre", station.genre.map(JSONValue.string)), ("homepage", station.homepage.map(JSONValue.string)),
            ("directory_uuid", station.directoryUUID.map(JSONValue.string)),
        ])
    }
}

/// A sink that reports a station's stream as `--json` lines: head, format, titles (with their
/// stream time), gaps, and the stop. Put it behind a `QueuedSink`.
final class MachineEventSink: StreamSink {
    private let station: Station
    private let writer: MachineEventWriter
    private let started = ContinuousClock.now
    /// Stream time so far, for the time of each title.
    private let position = Locked((samples: 0, sampleRate: 0))

    /// False when the command reports the stop itself, after the files behind it are written
    /// (record: its last file is closed after the stream ends, and its `file` event comes first).
    private let emitsStop: Bool

    package init(station: Station, writer: MachineEventWriter, emitsStop: Bool = true) {
        self.station = station
        self.writer = writer
        self.emitsStop = emitsStop
    }

    package func receive(_ event: StreamEvent) throws {
        switch event {
        case .head(let head):
            writer.emit(.head(head, station: station))
        case .format(let header):
            position.withLock { $0.sampleRate = header.sampleRate }
            writer.emit(.format(header, station: station))
        case .packet(let packet):
            position.withLock { $0.samples += packet.sampleCount }
        case .metadata(let change):
            let streamSeconds = position.withLock { $0.sampleRate > 0 ? Double($0.samples) / Double($0.sampleRate) : 0 }
            writer.emit(.title(change, streamSeconds: streamSeconds, station: station))
        case .discontinuity(let position):
            writer.emit(.discontinuity(at: position, station: station))
        case .connection(.reconnecting(let attempt, let after, let reason)):
            writer.emit(.reconnect(attempt: attempt, afterSeconds: after, reason: reason, station: station))
        case .connection:
            break
        case .ended(let reason):
            guard emitsStop else { return }
            writer.emit(.stop(reason, seconds: (ContinuousClock.now - started).seconds, station: station))
        }
    }
}
