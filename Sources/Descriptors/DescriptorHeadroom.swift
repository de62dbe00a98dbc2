import Glibc

/// The top descriptors of `RLIMIT_NOFILE` are never airtap's to take.
///
/// libdispatch's worker monitor opens `/proc/<tid>/stat` about once a second while a global queue
/// has work, and traps (SIGILL, "registered worker exited prematurely") when that open fails,
/// EMFILE included: a process whose recordings used up the descriptors would crash instead of
/// reporting the station that ran out. So every descriptor airtap opens itself goes
/// through `admit`: one whose number lands in the top `reserve` is closed at once and reported
/// as EMFILE. POSIX hands out the lowest free number, so a number that high means every lower
/// one is taken; the reserve stays free for the runtime, the event loops and the error path.
/// Its own module, below every layer that opens descriptors (curl's sockets, the recorder's files).
package enum DescriptorHeadroom {
    /// Descriptors left to the runtime: libdispatch's monitor needs one, NIO's accept back-off
    /// and a log line's reopen a few.
    package static let reserve = 16

    /// `descriptor` when it is below the headroom (or an error, -1, passed through); otherwise
    /// closes it and returns -1 with `errno` set to EMFILE.
    package static func admit(_ descriptor: Int32) -> Int32 {
        guard descriptor >= 0 else { return descriptor }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return descriptor }
        guard Int(descriptor) >= Int(clamping: limit.rlim_cur) - reserve else { return descriptor }
        close(descriptor)
        errno = EMFILE
        return -1
    }
}
