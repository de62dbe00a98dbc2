import CID3Tag
#if canImport(Glibc)
import Glibc
#endif

/// The text frames airtap reads from, and writes into, ID3v2 tags.
public struct ID3TextFrames: Sendable, Hashable {
    /// Four-letter frame id ("TIT2", "TPE1", ...) to its text, in the order they are written.
    public var frames: [(id: String, text: String)]

    public init(_ frames: [(id: String, text: String)] = []) { self.frames = frames }

    public subscript(id: String) -> String? { frames.first { $0.id == id }?.text }

    public var title: String? { self["TIT2"] }
    public var artist: String? { self["TPE1"] }

    public static func == (a: Self, b: Self) -> Bool {
        a.frames.elementsEqual(b.frames) { $0.id == $1.id && $0.text == $1.text }
    }

    public func hash(into hasher: inout Hasher) {
        for frame in frames { hasher.combine(frame.id); hasher.combine(frame.text) }
    }
}

/// Reads ID3v2 tags with libid3tag.
public enum ID3Reader {
    /// The text frames of a whole tag (header included), or nil when libid3tag cannot parse it.
    public static func textFrames(in tag: UnsafeRawBufferPointer) -> ID3TextFrames? {
        guard let base = tag.baseAddress?.assumingMemoryBound(to: id3_byte_t.self),
              let parsed = id3_tag_parse(base, id3_length_t(tag.count)) else { return nil }
        defer { id3_tag_delete(parsed) }
        var result = ID3TextFrames()
        for index in 0..<Int(parsed.pointee.nframes) {
            guard let frame = parsed.pointee.frames[index], let text = Self.text(of: frame) else { continue }
            result.frames.append((id: Self.frameID(frame), text: text))
        }
        return result
    }

    public static func textFrames(in tag: [UInt8]) -> ID3TextFrames? {
        tag.withUnsafeBytes { textFrames(in: $0) }
    }

    private static func frameID(_ frame: UnsafeMutablePointer<id3_frame>) -> String {
        withUnsafeBytes(of: frame.pointee.id) { raw in
            String(decoding: raw.prefix(4).prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// The first string of a text frame (T***), as UTF-8.
    private static func text(of frame: UnsafeMutablePointer<id3_frame>) -> String? {
        guard frame.pointee.id.0 == UInt8(ascii: "T").toCChar, frame.pointee.nfields >= 2,
              let field = id3_frame_field(frame, 1),
              id3_field_getnstrings(field) > 0,
              let ucs4 = id3_field_getstrings(field, 0),
              let utf8 = id3_ucs4_utf8duplicate(ucs4) else { return nil }
        defer { free(utf8) }
        return String(cString: utf8)
    }
}

/// Renders ID3v2.4 tags (libid3tag writes 2.4 only), UTF-8 text, no CRC or compression.
public enum ID3Writer {
    public static func render(_ frames: ID3TextFrames, includeV1: Bool = false) -> [UInt8] {
        guard let tag = id3_tag_new() else { return [] }
        defer { id3_tag_delete(tag) }
        var options = Int32(ID3_TAG_OPTION_COMPRESSION | ID3_TAG_OPTION_CRC)
        if includeV1 { options |= Int32(ID3_TAG_OPTION_ID3V1) }
        id3_tag_options(tag, options, includeV1 ? Int32(ID3_TAG_OPTION_ID3V1) : 0)
        for (id, text) in frames.frames {
            guard let frame = id3_frame_new(id) else { continue }
            guard set(text, in: frame) else { id3_frame_delete(frame); continue }
            id3_tag_attachframe(tag, frame)
        }
        let length = id3_tag_render(tag, nil)
        guard length > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { id3_tag_render(tag, $0.baseAddress) }
        return Array(bytes.prefix(Int(written)))
    }

    private static func set(_ text: String, in frame: UnsafeMutablePointer<id3_frame>) -> Bool {
        guard frame.pointee.nfields >= 2,
              let encoding = id3_frame_field(frame, 0),
              let strings = id3_frame_field(frame, 1) else { return false }
        id3_field_settextencoding(encoding, ID3_FIELD_TEXTENCODING_UTF_8)
        guard let ucs4 = text.withCString({ id3_utf8_ucs4duplicate(UnsafeRawPointer($0).assumingMemoryBound(to: id3_utf8_t.self)) }) else {
            return false
        }
        defer { free(ucs4) }
        var list: UnsafeMutablePointer<id3_ucs4_t>? = ucs4
        return id3_field_setstrings(strings, 1, &list) == 0
    }
}

extension UInt8 {
    fileprivate var toCChar: CChar { CChar(bitPattern: self) }
}
