/// A duration as users write it: `90`, `90s`, `15m`, `2h`, `1h30m`, `1.5h`, `250ms`.
package struct DurationSpec: Sendable, Hashable, CustomStringConvertible {
    package let seconds: Double

    package init(seconds: Double) { self.seconds = seconds }

    /// A hundred years: longer is a typo, and nanoseconds of it still fit the Int64 timers take.
    package static let maximumSeconds: Double = 100 * 365 * 86400

    /// nil when the text is not a positive duration of at most `maximumSeconds`.
    package init?(parsing text: String) {
        let text = text.trimmingSpaces().lowercased()
        guard !text.isEmpty else { return nil }
        if let plain = Double(text) {
            guard plain > 0, plain <= Self.maximumSeconds else { return nil }
            self.seconds = plain
            return
        }
        var total = 0.0
        var number = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character.isNumber || character == "." {
                number.append(character)
                index = text.index(after: index)
                continue
            }
            var unit = ""
            while index < text.endIndex, text[index].isLetter {
                unit.append(text[index])
                index = text.index(after: index)
            }
            guard let value = Double(number), let scale = Self.unitSeconds[unit] else { return nil }
            total += value * scale
            number = ""
        }
        guard number.isEmpty, total > 0, total <= Self.maximumSeconds else { return nil }
        self.seconds = total
    }

    private static let unitSeconds: [String: Double] = ["ms": 0.001, "s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400]

    package var description: String {
        var rest = Int(seconds.rounded())
        if seconds < 1 { return "\(Int(seconds * 1000))ms" }
        var parts = ""
        for (unit, size) in [("h", 3600), ("m", 60), ("s", 1)] where rest >= size {
            parts += "\(rest / size)\(unit)"
            rest %= size
        }
        return parts
    }
}

import FoundationEssentials
