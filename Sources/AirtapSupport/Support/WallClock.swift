#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

/// Calendar fields of an instant, in the process's local time zone (`TZ`, /etc/localtime) or in
/// UTC, from libc (localtime_r/mktime, gmtime_r/timegm). Without FoundationInternationalization
/// (ICU), FoundationEssentials' `Calendar.current` and `TimeZone.current` know only GMT, so file
/// names, tags, log stamps and `--until` would silently be in UTC instead of the user's time.
package struct WallClock: Sendable, Hashable {
    private let isUTC: Bool

    /// The user's time: what `date` prints.
    package static let local = WallClock(isUTC: false)
    /// Coordinated Universal Time (tests use it: their results must not depend on the machine).
    package static let utc = WallClock(isUTC: true)

    package struct Fields: Sendable, Hashable {
        package var year: Int
        /// 1...12
        package var month: Int
        /// 1...31
        package var day: Int
        package var hour: Int
        package var minute: Int
        package var second: Int
        /// Seconds east of UTC at that instant (daylight saving time included).
        package var utcOffsetSeconds: Int
    }

    /// The fields at `date`, to the whole second (fractions are dropped, as Calendar does).
    package func fields(of date: Date) -> Fields {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        if isUTC { gmtime_r(&seconds, &parts) } else { localtime_r(&seconds, &parts) }
        return Fields(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
                      hour: Int(parts.tm_hour), minute: Int(parts.tm_min), second: Int(parts.tm_sec),
                      utcOffsetSeconds: Int(parts.tm_gmtoff))
    }

    /// The instant with these fields; out-of-range fields carry over (day 32 is next month's 1st).
    /// A local time that a daylight-saving change skips or repeats gets mktime's choice.
    package func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date {
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        parts.tm_isdst = -1
        let seconds = isUTC ? timegm(&parts) : mktime(&parts)
        return Date(timeIntervalSince1970: Double(seconds))
    }

    /// `2026-11-22T21:30:05+01:00` (`Z` for UTC): ISO 8601 / RFC 3339 to the second, as
    /// ISO8601DateFormatter's `.withInternetDateTime` writes it.
    package func internetDateTime(_ date: Date) -> String {
        let parts = fields(of: date)
        var text = "\(parts.year.zeroPadded(width: 4))-\(parts.month.zeroPadded(width: 2))-\(parts.day.zeroPadded(width: 2))"
        text += "T\(parts.hour.zeroPadded(width: 2)):\(parts.minute.zeroPadded(width: 2)):\(parts.second.zeroPadded(width: 2))"
        let offset = parts.utcOffsetSeconds
        guard offset != 0 else { return text + "Z" }
        let minutes = abs(offset) / 60
        return text + (offset < 0 ? "-" : "+") + "\((minutes / 60).zeroPadded(width: 2)):\((minutes % 60).zeroPadded(width: 2))"
    }
}
