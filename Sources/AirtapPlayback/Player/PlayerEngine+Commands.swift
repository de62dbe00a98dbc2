import AirtapSupport
import Glibc

/// The player's commands (keys, MPRIS, a station change) and the machine's actions on the device.
extension PlayerEngine {
    func handleCommands() {
        queue.takeCommands(into: &commands)
        for command in commands {
            switch command {
            case .togglePause:
                perform(machine.togglePause())
            case .changeVolume(let delta):
                changeGain { setVolume(status.volume + delta) }
            case .setAmplitude(let amplitude):
                changeGain { setAmplitude(amplitude) }
            case .setPaused(let paused):
                if paused != (machine.state == .paused) { perform(machine.togglePause()) }
            case .stop(let reason):
                perform(machine.finish(reason))
            case .standBy:
                perform(machine.standBy())
                publishStatus(changed: true)
            case .resume:
                perform(machine.resume())
                publishStatus(changed: true)
            case .connection(let connection):
                perform(machine.connection(connection))
            }
        }
    }

    /// Another station comes next: nothing of the last one is heard any more, and its decoder
    /// and format go (the next may differ in both).
    func changeStation() {
        output.discard()
        decoder = nil
        decoderConfiguration = nil
        format = nil
        stagingStart = 0
        stagingEnd = 0
        recent.removeAll(keepingCapacity: true)
        pendingTitles.removeAll(keepingCapacity: true)
        status.title = nil
        status.trackNumber = 0
        status.bitrate = nil
        perform(machine.changeStation())
        publishStatus(changed: true)
    }

    func perform(_ action: PlaybackMachine.Action) {
        do {
            try apply(action)
        } catch {
            logger.error("\(error)")
            perform(machine.finish(.error(error)))
        }
    }

    func apply(_ action: PlaybackMachine.Action) throws(AirtapError) {
        let before = status.state
        switch action {
        case .none, .end:
            break
        case .stop:
            output.stop()
        case .drain:
            output.drain()
        case .play:
            try output.start()
        case .recoverAndPlay:
            try output.recover()
            try output.start()
        case .pauseDevice:
            output.pause()
        case .resumeDevice:
            output.resume()
        }
        if machine.state != before { publishStatus(changed: true) }
    }

    /// Software gain, cubic like mpv's volume curve: 50 sounds about half as loud.
    func setVolume(_ volume: Int) {
        let clamped = min(100, max(0, volume))
        status.volume = clamped
        let scale = Double(clamped) / 100
        status.amplitude = scale * scale * scale
        gain = Int32((status.amplitude * Double(1 << 15)).rounded())
    }

    /// Software gain as a linear factor; `volume` shows the nearest step of the cubic scale.
    private func setAmplitude(_ amplitude: Double) {
        let clamped = amplitude.isNaN ? 1 : min(1, max(0, amplitude))
        status.amplitude = clamped
        status.volume = Int((Glibc.cbrt(clamped) * 100).rounded())
        gain = Int32((clamped * Double(1 << 15)).rounded())
    }
}
