@testable import AirtapKit
@testable import AirtapPlayback
@testable import AirtapStations
import AirtapTestSupport
import DesktopBus
import Logging
import Testing

/// MPRIS Stop stops playback without ending `play`; Play starts it again. The rules alone.
@Suite("Player logic: Stop and Play again")
struct PlayerStandByTests {
    @Test("Standing by: from playing or paused, nothing plays, the station change that comes with it keeps it, Play waits for a full buffer as at first")
    func standByAndResume() {
        var machine = PlaybackMachine(bufferSeconds: 2)
        _ = machine.queued(seconds: 2, complete: false)
        _ = machine.togglePause()
        #expect(machine.standBy() == .none)
        #expect(machine.state == .standingBy)
        #expect(!machine.allowsNetworkRest)
        // The discarded audio's station change, a pause key, audio and a step change nothing.
        #expect(machine.changeStation() == .none)
        #expect(machine.togglePause() == .none)
        #expect(machine.queued(seconds: 5, complete: true) == .none)
        #expect(machine.step(PlayerLogicTests.seen(waiting: 5, queueEmpty: false, complete: false)) == .none)
        #expect(machine.state == .standingBy)
        // Play: as at first, `.play` once the buffer is full, not a recovery after an underrun.
        #expect(machine.resume() == .none)
        #expect(machine.state == .connecting)
        #expect(machine.queued(seconds: 1, complete: false) == .none)
        #expect(machine.queued(seconds: 2, complete: false) == .play)
        #expect(machine.state == .playing)
        // Play while playing is nothing; a quit while standing by ends as ever.
        #expect(machine.resume() == .none)
        _ = machine.standBy()
        #expect(machine.finish(.userRequest) == .stop(.userRequest))
        #expect(machine.standBy() == .none)
        #expect(machine.state == .stopped(.userRequest))
    }

    @Test("Standing by shows as Stopped on the bus, and Stop no longer quits")
    func busShowsStopped() {
        var status = PlayerStatus()
        status.state = .standingBy
        let snapshot = MPRISSnapshot(status: status, station: Station(id: "x", name: "X", urls: ["http://127.0.0.1:9/"]))
        #expect(snapshot.playbackStatus == "Stopped")
        var quits = 0
        // Nothing the player is told either: the job disconnects the station.
        MPRISAction.stop.perform(on: Player(configuration: PlayerConfiguration(), logger: .init(label: "t"), onChange: { _ in }),
                                 quit: { quits += 1 })
        #expect(quits == 0)
        MPRISAction.quit.perform(on: Player(configuration: PlayerConfiguration(), logger: .init(label: "t"), onChange: { _ in }),
                                 quit: { quits += 1 })
        #expect(quits == 1)
    }
}
