import Glibc
import ICYWire
import SystemPackage

/// Writes whole lines straight to the file descriptors (Swift 6: no shared C `FILE *`).
package enum Terminal {
    package static func output(_ line: String) {
        write(line + "\n", to: STDOUT_FILENO)
    }

    package static func error(_ line: String) {
        write(line + "\n", to: STDERR_FILENO)
    }

    /// Without a newline: the status line redraws itself in place.
    package static func errorPartial(_ text: String) {
        write(text, to: STDERR_FILENO)
    }

    /// An error as the one line a command ends with; inert, since errors quote what a station
    /// sent (reason phrases, URLs, content types).
    package static func report(_ error: AirtapError) {
        self.error("airtap: \(InertText.render(error.description))")
    }

    /// write(2) until all of it is out; on an error (a closed pipe) the rest is dropped.
    package static func write(_ text: String, to descriptor: Int32) {
        _ = try? FileDescriptor(rawValue: descriptor).writeAll(text.utf8)
    }

    /// Whether stderr is a terminal (a status line or keys make sense there).
    package static var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Whether keys can be read from stdin and a status line drawn on stderr.
    package static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && errorIsTerminal }
}

/// What the process does before any command runs, and how it ends.
package enum CommandProcess {
    package static func prepare() {
        // A full disk or a file-size limit must be an error we report (exit 3, files kept),
        // not a signal that kills the process mid-write.
        signal(SIGXFSZ, SIG_IGN)
        // A write to a socket or pipe whose reader went away (an Icecast server that drops the
        // push, a player that quits) must come back as EPIPE, an error the job logs and
        // reconnects after, not kill the process: libshout writes with plain send(), and so does
        // any other library that does not pass MSG_NOSIGNAL.
        signal(SIGPIPE, SIG_IGN)
        // Many stations and listeners need many descriptors; the soft default (1024) is far below
        // what the hard limit allows.
        DescriptorLimit.raiseSoftLimitToHard()
        // A closed standard descriptor would be the number of the next one opened (an epoll
        // instance, a track's file): `record -` would read airtap's own descriptor and `relay
        // --to -` write into it. Each closed one is /dev/null instead, as a daemon's are.
        for standard in STDIN_FILENO...STDERR_FILENO where fcntl(standard, F_GETFD) < 0 {
            _ = open("/dev/null", standard == STDIN_FILENO ? O_RDONLY : O_WRONLY)
        }
    }

    package static func exit(_ code: Int32) -> Never {
        Glibc.exit(code)
    }
}
