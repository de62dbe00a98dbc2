import FoundationEssentials

/// A size as users write it: `500000`, `500k`, `700M`, `2G` (binary multiples: k = 1024).
package struct ByteSize: Sendable, Hashable, CustomStringConvertible {
    package let bytes: Int

    package init(bytes: Int) { self.bytes = bytes }

    package init?(parsing text: String) {
        let text = text.trimmingSpaces()
        let units: [Character: Double] = ["k": 1024, "m": 1024 * 1024, "g": 1024 * 1024 * 1024]
        var number = Substring(text)
        var scale = 1.0
        if let last = text.last?.lowercased().first, let unit = units[last] {
            scale = unit
            number = text.dropLast()
        } else if text.lowercased().hasSuffix("b"), let unit = text.dropLast().last?.lowercased().first.flatMap({ units[$0] }) {
            scale = unit
            number = text.dropLast(2)
        }
        guard let value = Double(number), value > 0, value.isFinite, value * scale < Double(Int.max) else { return nil }
        bytes = Int(value * scale)
    }

    package var description: String {
        for (suffix, size) in [("G", 1 << 30), ("M", 1 << 20), ("k", 1 << 10)] where bytes >= size && bytes % size == 0 {
            return "\(bytes / size)\(suffix)"
        }
        return "\(bytes)"
    }
}

/// A wall-clock time of day, `HH:MM`, for `--until`.
package struct ClockTime: Sendable, Hashable, CustomStringConvertible {
    package let hour: Int
    package let minute: Int

    package init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count <= 2, parts[1].count == 2,
              let hour = Int(parts[0]), let minute = Int(parts[1]),
              (0..<24).contains(hour), (0..<60).contains(minute) else { return nil }
        self.hour = hour
        self.minute = minute
    }

    /// Seconds from `now` to the next time `clock` shows this time (tomorrow if it has passed today).
    package func seconds(after now: Date, clock: WallClock = .local) -> Double {
        let today = clock.fields(of: now)
        var next = clock.date(year: today.year, month: today.month, day: today.day, hour: hour, minute: minute, second: 0)
        if next <= now {
            next = clock.date(year: today.year, month: today.month, day: today.day + 1, hour: hour, minute: minute, second: 0)
        }
        return next.timeIntervalSince(now)
    }

    package var description: String { "\(hour.zeroPadded(width: 2)):\(minute.zeroPadded(width: 2))" }
}
