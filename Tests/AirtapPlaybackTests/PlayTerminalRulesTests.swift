@testable import AirtapIngest
@testable import AirtapKit
@testable import AirtapPlayback
@testable import AirtapSupport
import AirtapTestSupport
import ICYWire
import Locking
import Logging
import Testing

/// `play` on and off a terminal, without one: the status line, what each key does, the notice's
/// few seconds and the log lines' filter.
@Suite("play's terminal rules, without a terminal")
struct PlayTerminalRulesTests {
    static func status(_ state: PlayerState, title: String? = nil) -> PlayerStatus {
        var status = PlayerStatus()
        status.state = state
        status.title = title.map { TrackInfo(streamTitle: $0) }
        return status
    }

    @Test("The status line: symbol, station, title, state when not playing, time, bitrate, buffer, volume, REC, notice")
    func statusLine() {
        var status = Self.status(.playing, title: "Artist - Song")
        status.heardSeconds = 75.6
        status.bitrate = 128
        status.bufferedSeconds = 1.04
        status.volume = 80
        let line = PlayStatusLine.render(stationName: "Jazz", status: status, recording: false, notice: nil, width: 200)
        #expect(line == "▶ Jazz · Artist - Song · 1:15 · 128 kbps · buffer 1.0 s · vol 80")
        status.state = .paused
        status.underruns = 2
        let paused = PlayStatusLine.render(stationName: "Jazz", status: status, recording: true, notice: "recording", width: 200)
        #expect(paused == "⏸ Jazz · Artist - Song · paused · 1:15 · 128 kbps · buffer 1.0 s · underruns 2 · vol 80 · ● REC · recording")
        let connecting = PlayStatusLine.render(stationName: "Jazz", status: Self.status(.connecting), recording: false,
                                               notice: nil, width: 200)
        #expect(connecting.hasPrefix("… Jazz · connecting · 0:00"), "\(connecting)")
    }

    @Test("The status line is inert and cut to the width; the width is one less than the columns, 119 unknown")
    func statusLineWidth() {
        let status = Self.status(.playing, title: "evil\u{1B}[2J title")
        let line = PlayStatusLine.render(stationName: "S", status: status, recording: false, notice: nil, width: 200)
        #expect(line.contains("evil\\e[2J title"), "\(line)")
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 })
        #expect(PlayStatusLine.render(stationName: "S", status: status, recording: false, notice: nil, width: 10) == "▶ S · evil")
        #expect(PlayStatusLine.width(columns: 80) == 79)
        #expect(PlayStatusLine.width(columns: nil) == 119)
    }

    /// Controls over a recording switch and a song keeper that write nowhere, the player's side
    /// recorded.
    final class Rig: Sendable {
        let calls = Locked<[String]>([])
        let keeper = SongKeeper { _ in QueuedSink(CollectingSink(), label: "test") }
        let recordingFails: Bool
        let heard: Int

        init(recordingFails: Bool = false, heard: Int = 0) {
            self.recordingFails = recordingFails
            self.heard = heard
        }

        var controls: PlayControls {
            let recordingSwitch = RecordingSwitch { [recordingFails] in
                if recordingFails { throw AirtapError.localIO("read-only folder") }
                return RecordingSwitch.Recording(sink: QueuedSink(CollectingSink(), label: "test"), release: {})
            }
            return PlayControls(togglePause: { [calls] in calls.withLock { $0.append("pause") } },
                                changeVolume: { [calls] delta in calls.withLock { $0.append("volume \(delta)") } },
                                heardTrack: { [heard] in heard }, current: { [keeper] in (recordingSwitch, keeper) })
        }

        /// Titles arriving, one after the other.
        func titles(_ titles: [String]) throws {
            for (index, title) in titles.enumerated() {
                try keeper.receive(.metadata(TrackChange(info: TrackInfo(streamTitle: title), position: index * 1000, source: .icy)))
            }
        }
    }

    @Test("Keys: pause and volume reach the player without a notice, q quits")
    func playerKeys() {
        let rig = Rig()
        let controls = rig.controls
        #expect(controls.perform(.togglePause) == .notice(nil))
        #expect(controls.perform(.changeVolume(by: -5)) == .notice(nil))
        #expect(controls.perform(.quit) == .quit)
        #expect(rig.calls.withLock { $0 } == ["pause", "volume -5"])
    }

    @Test("> and <: the move reaches the job without a notice (the status line shows the station)")
    func stationKeys() {
        let rig = Rig()
        let moves = Locked<[Bool]>([])
        let controls = PlayControls(togglePause: {}, changeVolume: { _ in }, heardTrack: { 0 },
                                    current: { (RecordingSwitch { throw AirtapError.localIO("unused") }, rig.keeper) },
                                    moveStation: { forward in moves.withLock { $0.append(forward) } })
        #expect(controls.perform(.moveStation(forward: true)) == .notice(nil))
        #expect(controls.perform(.moveStation(forward: false)) == .notice(nil))
        #expect(moves.withLock { $0 } == [true, false])
    }

    @Test("r: starts recording, then stops it; a recorder that cannot start says why")
    func recordingKey() {
        let controls = Rig().controls
        #expect(controls.perform(.toggleRecording) == .notice("recording"))
        #expect(controls.perform(.toggleRecording) == .notice("recording stopped"))
        #expect(controls.perform(.toggleRecording) == .notice("recording"))
        let failing = Rig(recordingFails: true).controls
        guard case .notice(let message?) = failing.perform(.toggleRecording) else {
            Issue.record("no notice")
            return
        }
        #expect(message.hasPrefix("cannot record: ") && message.contains("read-only folder"), "\(message)")
    }

    @Test("s: the song heard is saved under its title, once; one not kept (gone, or not begun) says so")
    func saveKey() throws {
        let heard = Rig(heard: 1)
        try heard.titles(["Artist - Song"])
        let controls = heard.controls
        #expect(controls.perform(.saveSong) == .notice("saving Artist - Song"))
        #expect(controls.perform(.saveSong) == .notice("already saving this song"))
        // Track 2 has not begun here: nothing to save.
        let ahead = Rig(heard: 2).controls
        #expect(ahead.perform(.saveSong) == .notice("this song is no longer kept"))
        // The keeper holds the last four tracks: after six titles, track 1 is gone.
        let late = Rig(heard: 1)
        try late.titles(["a", "b", "c", "d", "e", "f"])
        #expect(late.controls.perform(.saveSong) == .notice("this song is no longer kept"))
    }

    @Test("A notice shows for three seconds, then is gone; a new one replaces it")
    func notice() {
        let board = NoticeBoard()
        let start = ContinuousClock.now
        #expect(board.current(at: start) == nil)
        board.show("saving", at: start)
        #expect(board.current(at: start.advanced(by: .seconds(2.9))) == "saving")
        #expect(board.current(at: start.advanced(by: .seconds(3))) == nil)
        board.show("recording", at: start.advanced(by: .seconds(1)))
        #expect(board.current(at: start.advanced(by: .seconds(3.5))) == "recording")
    }

    @Test("Off a terminal: a line when the state changes (buffering once, whatever its percent) or the title does")
    func logFilter() {
        var filter = PlayLogFilter()
        #expect(filter.changes(Self.status(.connecting)) == .init(state: .connecting, title: nil))
        #expect(filter.changes(Self.status(.connecting)) == .init(state: nil, title: nil))
        #expect(filter.changes(Self.status(.buffering(percent: 10))) == .init(state: .buffering(percent: 0), title: nil))
        #expect(filter.changes(Self.status(.buffering(percent: 60))) == .init(state: nil, title: nil))
        let titled = Self.status(.playing, title: "A - B")
        #expect(filter.changes(titled) == .init(state: .playing, title: TrackInfo(streamTitle: "A - B")))
        #expect(filter.changes(titled) == .init(state: nil, title: nil))
        // The title going away is a change, but nothing to print.
        #expect(filter.changes(Self.status(.playing)) == .init(state: nil, title: nil))
        #expect(filter.changes(titled) == .init(state: nil, title: TrackInfo(streamTitle: "A - B")))
    }
}
