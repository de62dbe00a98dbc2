import Glibc

/// The process's file-descriptor budget (`RLIMIT_NOFILE`). Every station costs a socket and a
/// file or two, every relay listener a socket: running out must be an error we report (exit 3),
/// never a crash or a recording that silently stops.
package enum DescriptorLimit {
    /// Raises the soft limit to the hard one, as Go and nginx do at start: the soft default of
    /// 1024 is a relic of select(2), which airtap does not use. Returns the soft limit now in force.
    @discardableResult
    package static func raiseSoftLimitToHard() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur == rlim_t.max ? Int.max : Int(clamping: limit.rlim_cur)
    }

    /// The soft limit now in force.
    package static var current: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return limit.rlim_cur == rlim_t.max ? Int.max : Int(clamping: limit.rlim_cur)
    }

    /// What to tell a user whose process ran out.
    package static var advice: String { "too many open files (limit \(current)); raise it with 'ulimit -n' or run fewer stations per process" }
}
