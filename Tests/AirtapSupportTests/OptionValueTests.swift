import AirtapKit
import AirtapSupport
import AirtapTestSupport
import Foundation
import Testing

@Suite("Option values")
struct OptionValueTests {
    @Test("Durations as users write them", arguments: [
        ("90", 90.0), ("90s", 90), ("15m", 900), ("2h", 7200), ("1h30m", 5400), ("1.5h", 5400), ("250ms", 0.25), ("1d", 86400),
    ])
    func durations(text: String, seconds: Double) {
        #expect(DurationSpec(parsing: text)?.seconds == seconds)
    }

    @Test("Not durations (nor ones so long they would overflow a timer)", arguments: ["", "0", "-5m", "abc", "10x", "m", "1h30", "nan", "1e10", "1e17", "99999999d", "inf"])
    func notDurations(text: String) {
        #expect(DurationSpec(parsing: text) == nil)
    }

    @Test("Sizes are 1024-based", arguments: [("500000", 500_000), ("500k", 512_000), ("700M", 734_003_200), ("2G", 2_147_483_648), ("1.5kb", 1536)])
    func sizes(text: String, bytes: Int) {
        #expect(ByteSize(parsing: text)?.bytes == bytes)
    }

    @Test("Not sizes", arguments: ["", "0", "-1M", "12X", "M"])
    func notSizes(text: String) {
        #expect(ByteSize(parsing: text) == nil)
    }

    @Test("--until: the next time the clock shows HH:MM, tomorrow if it has passed")
    func clockTimes() throws {
        let now = WallClock.utc.date(year: 2026, month: 11, day: 22, hour: 21, minute: 30, second: 0)
        #expect(abs((ClockTime(parsing: "22:00")?.seconds(after: now, clock: .utc) ?? 0) - 1800) < 0.001)
        #expect(abs((ClockTime(parsing: "07:30")?.seconds(after: now, clock: .utc) ?? 0) - 36000) < 0.001)
        #expect(abs((ClockTime(parsing: "21:30")?.seconds(after: now, clock: .utc) ?? 0) - 86400) < 0.001)
        // Over the end of a month and of a year.
        let newYearsEve = WallClock.utc.date(year: 2026, month: 12, day: 31, hour: 23, minute: 50, second: 30)
        #expect(abs((ClockTime(parsing: "00:05")?.seconds(after: newYearsEve, clock: .utc) ?? 0) - 870) < 0.001)
        for bad in ["24:00", "7:5", "12:60", "noon", "12", ""] { #expect(ClockTime(parsing: bad) == nil, "\(bad)") }
    }
}
