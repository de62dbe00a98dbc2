/// A D-Bus value airtap sends: the few types MPRIS and desktop notifications use.
package enum BusValue: Sendable, Hashable {
    case string(String)
    case objectPath(String)
    case boolean(Bool)
    case double(Double)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case strings([String])
    /// `a{sv}`: a dictionary of variants, in this order.
    case dictionary([BusEntry])
    indirect case variant(BusValue)

    /// The value's D-Bus signature.
    package var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .boolean: "b"
        case .double: "d"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .strings: "as"
        case .dictionary: "a{sv}"
        case .variant: "v"
        }
    }
}

/// One entry of an `a{sv}` dictionary.
package struct BusEntry: Sendable, Hashable {
    package let key: String
    package let value: BusValue

    package init(_ key: String, _ value: BusValue) {
        self.key = key
        self.value = value
    }
}

/// Text from strangers (titles, station names) made fit for the bus: sd-bus refuses a string
/// with a NUL, and a desktop panel has no use for control characters or a megabyte of title.
package enum BusText {
    /// Bytes kept of one string, cut at a character boundary.
    package static let maximumBytes = 1024

    package static func inert(_ text: String) -> String {
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            let isControl = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            let replacement: Unicode.Scalar = isControl ? " " : scalar
            let length = UTF8.width(replacement)
            guard bytes + length <= maximumBytes else { break }
            kept.append(replacement)
            bytes += length
        }
        return String(kept)
    }
}
