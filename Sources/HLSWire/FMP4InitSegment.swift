import ICYWire

/// An fMP4 initialization segment (`#EXT-X-MAP`): the audio track's ID, timescale and codec.
package struct FMP4InitSegment: Sendable, Hashable {
    package enum Codec: Sendable, Hashable {
        case aac(AudioSpecificConfig)
        /// MPEG audio in `mp4a` (object type 0x6B or 0x69): samples are whole MP3 frames.
        case mpegAudio
    }

    package var trackID: Int
    /// `mdhd` ticks per second.
    package var timescale: Int
    package var codec: Codec
    /// `trex` defaults for fragments that leave them out.
    package var defaultSampleDuration: Int
    package var defaultSampleSize: Int

    package static func parse(_ bytes: [UInt8], limits: FMP4Limits = FMP4Limits()) throws(FMP4Error) -> FMP4InitSegment {
        guard bytes.count <= limits.maxMetadataBoxLength else { throw .boxTooLarge(type: "init", size: bytes.count) }
        var tracks: [(id: Int, timescale: Int, codec: Codec?)] = []
        var defaults: [Int: (duration: Int, size: Int)] = [:]
        let topLevel: [MP4Box]
        do {
            topLevel = try MP4Box.children(of: bytes[...], depth: 0, limits: limits)
        } catch {
            throw .notAnInitSegment
        }
        guard topLevel.contains(where: { $0.type == "moov" }) else { throw .notAnInitSegment }
        for moov in topLevel where moov.type == "moov" {
            for child in try MP4Box.children(of: moov.payload, depth: 1, limits: limits) {
                switch child.type {
                case "trak":
                    if let track = try readTrack(child.payload, limits: limits) { tracks.append(track) }
                case "mvex":
                    for trex in try MP4Box.children(of: child.payload, depth: 2, limits: limits) where trex.type == "trex" {
                        var reader = ByteReader(trex.payload)
                        guard reader.skip(4), let id = reader.uint32(), reader.skip(4),
                              let duration = reader.uint32(), let size = reader.uint32() else { throw .malformedBox(type: "trex") }
                        defaults[Int(id)] = (Int(duration), Int(size))
                    }
                default:
                    break
                }
            }
        }
        guard let track = tracks.first(where: { $0.codec != nil }), let codec = track.codec else { throw .noAudioTrack }
        return FMP4InitSegment(trackID: track.id, timescale: track.timescale, codec: codec,
                               defaultSampleDuration: defaults[track.id]?.duration ?? 0,
                               defaultSampleSize: defaults[track.id]?.size ?? 0)
    }

    private static func readTrack(_ trak: ArraySlice<UInt8>, limits: FMP4Limits) throws(FMP4Error) -> (id: Int, timescale: Int, codec: Codec?)? {
        var trackID: Int?
        var timescale: Int?
        var isSound = false
        var codec: Codec?
        for box in try MP4Box.children(of: trak, depth: 2, limits: limits) {
            switch box.type {
            case "tkhd":
                var reader = ByteReader(box.payload)
                guard let version = reader.uint8(), reader.skip(3), reader.skip(version == 1 ? 16 : 8),
                      let id = reader.uint32() else { throw .malformedBox(type: "tkhd") }
                trackID = Int(id)
            case "mdia":
                for mdia in try MP4Box.children(of: box.payload, depth: 3, limits: limits) {
                    switch mdia.type {
                    case "mdhd":
                        var reader = ByteReader(mdia.payload)
                        guard let version = reader.uint8(), reader.skip(3), reader.skip(version == 1 ? 16 : 8),
                              let scale = reader.uint32(), scale > 0 else { throw .malformedBox(type: "mdhd") }
                        timescale = Int(scale)
                    case "hdlr":
                        var reader = ByteReader(mdia.payload)
                        guard reader.skip(8), let handler = reader.fourCC() else { throw .malformedBox(type: "hdlr") }
                        isSound = handler == "soun"
                    case "minf":
                        codec = try readSampleDescription(mdia.payload, limits: limits) ?? codec
                    default:
                        break
                    }
                }
            default:
                break
            }
        }
        guard let trackID, let timescale else { return nil }
        return (trackID, timescale, isSound ? codec : nil)
    }

    /// minf/stbl/stsd/mp4a/esds.
    private static func readSampleDescription(_ minf: ArraySlice<UInt8>, limits: FMP4Limits) throws(FMP4Error) -> Codec? {
        for stbl in try MP4Box.children(of: minf, depth: 4, limits: limits) where stbl.type == "stbl" {
            for stsd in try MP4Box.children(of: stbl.payload, depth: 5, limits: limits) where stsd.type == "stsd" {
                // Full box header (4) and entry count (4), then sample entries.
                guard stsd.payload.count >= 8 else { throw .malformedBox(type: "stsd") }
                for entry in try MP4Box.children(of: stsd.payload.dropFirst(8), depth: 6, limits: limits) where entry.type == "mp4a" {
                    // AudioSampleEntry: 6 reserved + 2 data ref + 8 reserved + 2 channels + 2 size + 4 + 4 rate = 28.
                    guard entry.payload.count >= 28 else { throw .malformedBox(type: "mp4a") }
                    for esds in try MP4Box.children(of: entry.payload.dropFirst(28), depth: 7, limits: limits) where esds.type == "esds" {
                        return try readESDescriptor(esds.payload.dropFirst(4))
                    }
                }
            }
        }
        return nil
    }

    /// ES_Descriptor (tag 3) -> DecoderConfigDescriptor (tag 4) -> DecoderSpecificInfo (tag 5).
    private static func readESDescriptor(_ bytes: ArraySlice<UInt8>) throws(FMP4Error) -> Codec {
        var reader = ByteReader(bytes)
        guard reader.uint8() == 3, reader.descriptorLength() != nil, reader.skip(2), let flags = reader.uint8() else {
            throw .malformedBox(type: "esds")
        }
        if flags & 0x80 != 0 { guard reader.skip(2) else { throw .malformedBox(type: "esds") } }
        if flags & 0x40 != 0 { guard let length = reader.uint8(), reader.skip(Int(length)) else { throw .malformedBox(type: "esds") } }
        if flags & 0x20 != 0 { guard reader.skip(2) else { throw .malformedBox(type: "esds") } }
        guard reader.uint8() == 4, reader.descriptorLength() != nil, let objectType = reader.uint8(), reader.skip(12) else {
            throw .malformedBox(type: "esds")
        }
        switch objectType {
        case 0x40, 0x66, 0x67, 0x68:
            guard reader.uint8() == 5, let length = reader.descriptorLength(), let info = reader.bytes(length),
                  let config = AudioSpecificConfig(info) else { throw .malformedAudioSpecificConfig }
            return .aac(config)
        case 0x69, 0x6B:
            return .mpegAudio
        default:
            throw .unsupportedCodec(objectType: Int(objectType))
        }
    }
}
