#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials

// The few pieces of Foundation's string API airtap used that FoundationEssentials lacks
// (String(format:), trimmingCharacters(in:), padding(toLength:...), localizedDescription):
// without them the binary does not link libFoundation and ICU (about 12 MB resident).

extension Double {
    /// `String(format: "%.Nf", self)`, the same digits: printf's own rounding, "nan" and "inf".
    package func formatted(decimals: Int) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let length = withVaList([Int32(max(0, decimals)), self]) { arguments in
            vsnprintf(&buffer, buffer.count, "%.*f", arguments)
        }
        if length >= 0 && Int(length) < buffer.count {
            return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        // Over 63 characters (|self| >= 1e62 or so): ask again with room for all of it.
        buffer = [CChar](repeating: 0, count: Int(max(length, 0)) + 1)
        let written = withVaList([Int32(max(0, decimals)), self]) { arguments in
            vsnprintf(&buffer, buffer.count, "%.*f", arguments)
        }
        return String(decoding: buffer.prefix(Int(max(written, 0))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension BinaryInteger {
    /// `String(format: "%0Nd", self)`: at least `width` digits, zeros in front (after a minus sign).
    package func zeroPadded(width: Int) -> String {
        let digits = String(self.magnitude)
        let sign = self < 0 ? "-" : ""
        let zeros = max(0, width - sign.count - digits.count)
        return sign + String(repeating: "0", count: zeros) + digits
    }
}

extension StringProtocol {
    /// `trimmingCharacters(in: .whitespaces)`: tabs and space separators (Unicode Zs) off both ends.
    package func trimmingSpaces() -> String {
        trimming { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
    }

    /// `trimmingCharacters(in: .whitespacesAndNewlines)`: Unicode White_Space off both ends.
    package func trimmingSpacesAndNewlines() -> String {
        trimming { $0.properties.isWhitespace }
    }

    /// `padding(toLength:withPad: " ", startingAt: 0)`: cut or space-filled to `length` UTF-16 units.
    package func padded(toLength length: Int) -> String {
        let units = Array(utf16)
        if units.count >= length { return String(decoding: units.prefix(length), as: UTF16.self) }
        return String(self) + String(repeating: " ", count: length - units.count)
    }

    /// `replacingOccurrences(of:with:)` for a one-scalar target, matched scalar by scalar. The
    /// standard library's `replacing(_:with:)` compares whole Characters, so it would miss a
    /// quote that a combining mark follows: shell quoting must not.
    package func replacingEvery(_ target: Unicode.Scalar, with replacement: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in unicodeScalars {
            if scalar == target { result.append(contentsOf: replacement.unicodeScalars) } else { result.append(scalar) }
        }
        return String(result)
    }

    private func trimming(_ isTrimmed: (Unicode.Scalar) -> Bool) -> String {
        let scalars = String(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !isTrimmed($0) }),
              let last = scalars.lastIndex(where: { !isTrimmed($0) }) else { return "" }
        return String(scalars[first...last])
    }
}

/// What a system error says, for messages: strerror's text for errno-style errors (also when a
/// FileManager error wraps one), else the error's own description. FoundationEssentials has no
/// `localizedDescription`, and `String(describing:)` of a CocoaError is a dump of its userInfo.
package func describeSystemError(_ error: any Error) -> String {
    if let posix = error as? POSIXError { return errorText(posix.code.rawValue) }
    if let cocoa = error as? CocoaError {
        if let posix = cocoa.underlying as? POSIXError {
            return errorText(posix.code.rawValue)
        }
        return "error \(cocoa.code.rawValue)" + (cocoa.filePath.map { " (\($0))" } ?? "")
    }
    return String(describing: error)
}

/// strerror(3)'s text for an errno value.
package func errorText(_ code: Int32) -> String {
    String(cString: strerror(code))
}
