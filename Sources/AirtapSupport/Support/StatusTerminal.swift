import Glibc
import Locking
import Logging
import SystemPackage

/// Owns the terminal line a command redraws in place (on stderr): every redraw is cut to the
/// terminal's width, read afresh each time (so a resized window is followed), log lines are
/// printed above it (cleared first, redrawn after), and at exit it is left with a newline.
///
/// The rules live here; the terminal itself is two closures (write the bytes, read the width),
/// so tests drive it without a tty.
package final class StatusTerminal: Sendable {
    private let write: @Sendable (String) -> Void
    private let columns: @Sendable () -> Int
    /// Every write to the terminal happens under this lock, so a log line and a redraw never
    /// interleave.
    private let state = Locked(State.idle)

    private enum State {
        /// Nothing drawn yet.
        case idle
        case showing(String)
        /// Left with a newline at exit: a late redraw must not start a new status line.
        case finished
    }

    package init(write: @escaping @Sendable (String) -> Void, columns: @escaping @Sendable () -> Int) {
        self.write = write
        self.columns = columns
    }

    /// On a terminal descriptor (stderr by default): write(2) until all is out (on an error, a
    /// closed terminal, the rest is dropped), and the width from TIOCGWINSZ, else $COLUMNS, else 80.
    package convenience init(descriptor: Int32 = STDERR_FILENO) {
        self.init(write: { text in _ = try? FileDescriptor(rawValue: descriptor).writeAll(text.utf8) },
                  columns: { Self.columns(of: descriptor) })
    }

    /// Redraws the status line with `text`.
    package func show(_ text: String) {
        state.withLock { state in
            if case .finished = state { return }
            state = .showing(text)
            write(Self.clearLine + Self.fitting(text, columns: columns()))
        }
    }

    /// Runs `body` (which writes whole lines to the terminal) with the status line cleared, and
    /// draws it again after.
    package func printAbove(_ body: () -> Void) {
        state.withLock { state in
            guard case .showing(let text) = state else { return body() }
            write(Self.clearLine)
            body()
            write(Self.fitting(text, columns: columns()))
        }
    }

    /// Leaves `text` (the last status) on its own line, ended by a newline, for the shell
    /// prompt to follow.
    package func finish(_ text: String) {
        state.withLock { state in
            if case .finished = state { return }
            state = .finished
            write(Self.clearLine + Self.fitting(text, columns: columns()) + "\n")
        }
    }

    package static let clearLine = "\r\u{1B}[K"

    /// The terminal's width now (TIOCGWINSZ), else $COLUMNS, else 80.
    package static func columns(of descriptor: Int32) -> Int {
        var size = winsize()
        if ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let text = getenv("COLUMNS"), let value = Int(String(cString: text)), value > 0 { return value }
        return 80
    }

    /// `text` cut to one column less than the width (writing the last column would leave some
    /// terminals about to wrap), with "…" where it was cut.
    package static func fitting(_ text: String, columns: Int) -> String {
        let limit = max(1, columns - 1)
        guard TerminalColumns.width(of: text) > limit else { return text }
        var result = ""
        var used = 0
        for character in text {
            let width = TerminalColumns.width(of: character)
            if used + width > limit - 1 { break }
            result.append(character)
            used += width
        }
        return result + "…"
    }
}

/// How many terminal columns text takes: East Asian wide and emoji characters two, combining
/// marks none, everything else one. Control characters never reach here (station text is made
/// inert by `InertText` first).
enum TerminalColumns {
    package static func width(of text: String) -> Int {
        text.reduce(0) { $0 + width(of: $1) }
    }

    package static func width(of character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        if first.properties.generalCategory == .nonspacingMark || first.properties.generalCategory == .enclosingMark { return 0 }
        if first.properties.isEmojiPresentation { return 2 }
        switch first.value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }
}

/// A log handler that prints through the status terminal: the status line is cleared before the
/// line and redrawn after it, so log lines never land inside it. The line itself is the wrapped
/// handler's, in its format.
struct StatusAwareLogHandler: LogHandler {
    package var inner: any LogHandler
    package let terminal: StatusTerminal

    package init(inner: any LogHandler, terminal: StatusTerminal) {
        self.inner = inner
        self.terminal = terminal
    }

    package func log(event: LogEvent) {
        terminal.printAbove { inner.log(event: event) }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    package var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    package var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }
}
