import AirtapIngest
import AirtapSupport
import Locking

/// `--record` and the `r` key: a recorder that can be attached to and detached from the
/// session's events while it plays, so recording shares the player's one connection.
package final class RecordingSwitch: StreamSink {
    /// One recording: the recorder's sink, and what to do once it has written everything
    /// (release the station's folder lock).
    package struct Recording: Sendable {
        package let sink: QueuedSink
        package let release: @Sendable () -> Void

        package init(sink: QueuedSink, release: @escaping @Sendable () -> Void) {
            self.sink = sink
            self.release = release
        }
    }

    package typealias Start = @Sendable () throws -> Recording

    private let start: Start
    private let state = Locked(State())

    private struct State {
        var head: StreamHead?
        var active: Recording?
    }

    package init(start: @escaping Start) {
        self.start = start
    }

    package var isRecording: Bool { state.withLock { $0.active != nil } }

    package func receive(_ event: StreamEvent) throws {
        let ended = state.withLock { state -> Recording? in
            if case .head(let head) = event { state.head = head }
            guard let active = state.active else { return nil }
            try? active.sink.receive(event)
            guard case .ended = event else { return nil }
            state.active = nil
            return active
        }
        if let ended { Self.complete(ended) }
    }

    /// Starts recording from the next packet on; false when already recording.
    @discardableResult
    package func startRecording() throws -> Bool {
        try state.withLock { state throws -> Bool in
            guard state.active == nil else { return false }
            let recording = try start()
            // A recorder joining mid-stream needs the response head (genre, station URL for tags).
            if let head = state.head { try recording.sink.receive(.head(head)) }
            state.active = recording
            return true
        }
    }

    /// Stops recording: the track in progress is kept (in `incomplete/`). Waits for the files.
    package func stopRecording(_ reason: StopReason = .userRequest) {
        let stopped = state.withLock { state -> Recording? in
            defer { state.active = nil }
            if let active = state.active { try? active.sink.receive(.ended(reason)) }
            return state.active
        }
        if let stopped { Self.complete(stopped) }
    }

    private static func complete(_ recording: Recording) {
        recording.sink.drain()
        recording.release()
    }
}
