import AirtapSupport
import Glibc
import Locking

/// On a terminal: raw keys (termios, restored on the way out) and the status line, redrawn four
/// times a second. What a key does and what the line shows are `PlayControls` and `PlayStatusLine`.
package final class PlayTerminal: Sendable {
    private let original: termios?
    private let task: Task<Void, Never>
    private let notice = NoticeBoard()

    /// `stationName` and `isRecording` are read for each redraw (the station can change).
    package init(stationName: @escaping @Sendable () -> String, player: Player, controls: PlayControls,
                 isRecording: @escaping @Sendable () -> Bool, quit: @escaping @Sendable () -> Void) {
        original = Self.enterRawMode()
        let notice = notice
        task = Task.detached {
            while !Task.isCancelled {
                let line = PlayStatusLine.render(stationName: stationName(), status: player.status,
                                                 recording: isRecording(), notice: notice.current(),
                                                 width: PlayStatusLine.width(columns: Self.columns()))
                Terminal.errorPartial(StatusTerminal.clearLine + line)
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
        let keys = PosixThread { [notice] in
            var byte: UInt8 = 0
            var decoder = PlayerKeyDecoder()
            while read(STDIN_FILENO, &byte, 1) == 1 {
                guard let action = decoder.action(for: byte) else { continue }
                switch controls.perform(action) {
                case .notice(let message):
                    if let message { notice.show(message) }
                case .quit:
                    quit()
                    return
                }
            }
        }
        keys.name = "airtap.keys"
        keys.start()
    }

    package func stop() {
        task.cancel()
        Terminal.errorPartial(StatusTerminal.clearLine)
        if var original { tcsetattr(STDIN_FILENO, TCSAFLUSH, &original) }
    }

    /// Keys arrive one by one without echo; Ctrl-C still sends SIGINT (ISIG stays on).
    private static func enterRawMode() -> termios? {
        var settings = termios()
        guard tcgetattr(STDIN_FILENO, &settings) == 0 else { return nil }
        let original = settings
        settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &settings)
        return original
    }

    /// stderr's width (TIOCGWINSZ), nil when it cannot be read.
    private static func columns() -> Int? {
        var size = winsize()
        return ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : nil
    }
}
