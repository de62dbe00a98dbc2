/// What a link's identification header says about its audio.
package struct OggAudioInfo: Sendable, Hashable {
    package let codec: OggCodec
    /// Vorbis: the coded rate. Opus: always 48000 (the rate Opus decodes and counts granules at).
    package let sampleRate: Int
    package let channels: Int
    /// Vorbis's nominal bitrate in bit/s when the encoder set one; Opus has none.
    package let nominalBitrate: Int?
    /// Opus: samples (at 48 kHz) to drop at the start of the link.
    package let preSkip: Int
    /// Opus: the rate of the original input, for information only.
    package let inputSampleRate: Int?

    /// nil when the packet is not a well-formed Vorbis or Opus identification header.
    package init?(identificationPacket packet: ArraySlice<UInt8>) {
        let codec = OggCodec(identificationPacket: packet)
        switch codec {
        case .vorbis:
            guard packet.count >= 30, readUInt32LE(packet, at: 7) == 0 else { return nil }
            let channels = Int(packet[packet.startIndex + 11])
            let rate = Int(readUInt32LE(packet, at: 12))
            let nominal = Int32(bitPattern: readUInt32LE(packet, at: 20))
            guard channels > 0, rate > 0, rate <= 768_000 else { return nil }
            self.init(codec: codec, sampleRate: rate, channels: channels,
                      nominalBitrate: nominal > 0 ? Int(nominal) : nil, preSkip: 0, inputSampleRate: nil)
        case .opus:
            guard packet.count >= 19, packet[packet.startIndex + 8] & 0xF0 == 0 else { return nil }
            let channels = Int(packet[packet.startIndex + 9])
            let preSkip = Int(packet[packet.startIndex + 10]) | Int(packet[packet.startIndex + 11]) << 8
            let input = Int(readUInt32LE(packet, at: 12))
            guard channels > 0 else { return nil }
            self.init(codec: codec, sampleRate: 48000, channels: channels, nominalBitrate: nil, preSkip: preSkip,
                      inputSampleRate: input > 0 ? input : nil)
        default:
            return nil
        }
    }

    init(codec: OggCodec, sampleRate: Int, channels: Int, nominalBitrate: Int?, preSkip: Int, inputSampleRate: Int?) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.nominalBitrate = nominalBitrate
        self.preSkip = preSkip
        self.inputSampleRate = inputSampleRate
    }
}

/// A Vorbis comment block (Vorbis's second header, Opus's OpusTags): a vendor string and
/// "KEY=value" fields, UTF-8. Strangers write these: every length is checked against the
/// packet before anything is read or allocated.
package struct VorbisComments: Sendable, Hashable {
    package struct Field: Sendable, Hashable {
        /// Upper-cased (keys are case-insensitive ASCII).
        package let key: String
        package let value: String
        package init(key: String, value: String) {
            self.key = key.uppercased()
            self.value = value
        }
    }

    package var vendor: String
    package var fields: [Field]

    package init(vendor: String, fields: [Field]) {
        self.vendor = vendor
        self.fields = fields
    }

    /// The first value of `key`.
    package subscript(key: String) -> String? {
        let wanted = key.uppercased()
        return fields.first { $0.key == wanted }?.value
    }

    package var title: String? { self["TITLE"] }
    package var artist: String? { self["ARTIST"] }

    /// "Artist - Title", the ICY shape the track namer already knows; nil without a title.
    package var streamTitle: String? {
        guard let title, !title.isEmpty else { return nil }
        guard let artist, !artist.isEmpty else { return title }
        return "\(artist) - \(title)"
    }

    static let vorbisSignature: [UInt8] = [0x03] + Array("vorbis".utf8)
    static let opusSignature: [UInt8] = Array("OpusTags".utf8)

    /// Fields beyond this many are ignored (a real tag has a few dozen).
    package static let maxFieldCount = 1024

    /// Parses the comment packet of `codec`; nil when it is not one or a length runs past its end.
    package static func parse(packet: ArraySlice<UInt8>, codec: OggCodec) -> VorbisComments? {
        let signature: [UInt8]
        switch codec {
        case .vorbis: signature = vorbisSignature
        case .opus: signature = opusSignature
        default: return nil
        }
        guard packet.starts(with: signature) else { return nil }
        var reader = LengthPrefixedReader(bytes: packet.dropFirst(signature.count))
        guard let vendor = reader.string(), let count = reader.uint32() else { return nil }
        var fields: [Field] = []
        for _ in 0..<min(Int(count), maxFieldCount) {
            guard let text = reader.string() else { return nil }
            guard let equals = text.firstIndex(of: "=") else { continue }
            fields.append(Field(key: String(text[..<equals]), value: String(text[text.index(after: equals)...])))
        }
        return VorbisComments(vendor: vendor, fields: fields)
    }

    /// The comment packet for `codec` (Vorbis with its framing bit).
    package func packet(for codec: OggCodec) -> [UInt8] {
        var output = codec == .opus ? Self.opusSignature : Self.vorbisSignature
        func appendString(_ text: String) {
            appendLE(UInt64(text.utf8.count), bytes: 4, to: &output)
            output.append(contentsOf: text.utf8)
        }
        appendString(vendor)
        appendLE(UInt64(fields.count), bytes: 4, to: &output)
        for field in fields { appendString("\(field.key)=\(field.value)") }
        if codec == .vorbis { output.append(1) }
        return output
    }
}

/// Reads little-endian 32-bit lengths and the UTF-8 strings they prefix, never past the end.
struct LengthPrefixedReader {
    var bytes: ArraySlice<UInt8>

    mutating func uint32() -> UInt32? {
        guard bytes.count >= 4 else { return nil }
        defer { bytes = bytes.dropFirst(4) }
        return readUInt32LE(bytes, at: 0)
    }

    mutating func string() -> String? {
        guard let length = uint32(), Int(length) <= bytes.count else { return nil }
        defer { bytes = bytes.dropFirst(Int(length)) }
        return TextDecoding.decode(Array(bytes.prefix(Int(length))), fallback: .cp1252)
    }
}
