import CID3Tag
#if canImport(Glibc)
import Glibc
#endif

/// The text frames airtap reads from, and writes into, ID3v2 tags.
package struct ID3TextFrames: Sendable, Hashable {
    /// Four-letter frame id ("TIT2", "TPE1", ...) to its text, in the order they are written.
    package var frames: [(id: String, text: String)]

    package init(_ frames: [(id: String, text: String)] = []) { self.frames = frames }

    package subscript(id: String) -> String? { frames.first { $0.id == id }?.text }

    package var title: String? { self["TIT2"] }
    package var artist: String? { self["TPE1"] }

    package static func == (a: Self, b: Self) -> Bool {
        a.frames.elementsEqual(b.frames) { $0.id == $1.id && $0.text == $1.text }
    }

    package func hash(into hasher: inout Hasher) {
        for frame in frames { hasher.combine(frame.id); hasher.combine(frame.text) }
    }
}

/// Reads ID3v2 tags with libid3tag.
package enum ID3Reader {
    /// Each text is cut to this many UTF-8 bytes (on a character boundary): a title is a line,
    /// and a station's tag is not to fill memory, logs or every recorded file's tag.
    package static let maxTextBytes = 4096

    /// The text frames of a whole tag (header included), or nil when the tag is refused (see
    /// `readTextFrames`) or libid3tag cannot parse it.
    package static func textFrames(in tag: UnsafeRawBufferPointer) -> ID3TextFrames? {
        try? readTextFrames(in: tag)
    }

    /// The text frames of a whole tag (header included), each cut to `maxTextBytes`. A tag whose
    /// compressed frames declare more than `ID3InflationLimits` allows is refused before
    /// libid3tag inflates them; nil when libid3tag cannot parse the tag.
    package static func readTextFrames(
        in tag: UnsafeRawBufferPointer, maxTextBytes: Int = maxTextBytes
    ) throws(ID3TagError) -> ID3TextFrames? {
        try ID3InflationCheck.check(tag, limits: ID3InflationLimits())
        guard let base = tag.baseAddress?.assumingMemoryBound(to: id3_byte_t.self),
              let parsed = id3_tag_parse(base, id3_length_t(tag.count)) else { return nil }
        defer { id3_tag_delete(parsed) }
        var result = ID3TextFrames()
        for index in 0..<Int(parsed.pointee.nframes) {
            guard let frame = parsed.pointee.frames[index], let text = Self.text(of: frame) else { continue }
            result.frames.append((id: Self.frameID(frame), text: cut(text, toUTF8Bytes: maxTextBytes)))
        }
        return result
    }

    /// The longest prefix of whole characters that fits in `limit` UTF-8 bytes.
    static func cut(_ text: String, toUTF8Bytes limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var bytes = 0
        var end = text.startIndex
        for index in text.indices {
            let next = text.index(after: index)
            bytes += text.utf8.distance(from: index, to: next)
            guard bytes <= limit else { break }
            end = next
        }
        return String(text[..<end])
    }

    package static func textFrames(in tag: [UInt8]) -> ID3TextFrames? {
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

/// What airtap writes into a recorded file's tag.
package struct ID3TagContent: Sendable, Hashable {
    /// Text frames (TIT2, TPE1, TALB, TCON, TRCK, TDRC, TSSE ...), in order.
    package var text: ID3TextFrames
    /// URL frames (WOAS, WORS ...): Latin-1 by the standard, so non-ASCII URLs are dropped.
    package var urls: [(id: String, url: String)]
    /// A COMM frame in English with an empty description.
    package var comment: String?
    /// TXXX frames (user-defined text: `REPLAYGAIN_TRACK_GAIN` ...), one per description.
    package var userText: [(description: String, text: String)]

    package init(text: ID3TextFrames = ID3TextFrames(), urls: [(id: String, url: String)] = [], comment: String? = nil,
                 userText: [(description: String, text: String)] = []) {
        self.text = text
        self.urls = urls
        self.comment = comment
        self.userText = userText
    }

    package static func == (a: Self, b: Self) -> Bool {
        a.text == b.text && a.comment == b.comment && a.urls.elementsEqual(b.urls) { $0.id == $1.id && $0.url == $1.url }
            && a.userText.elementsEqual(b.userText) { $0.description == $1.description && $0.text == $1.text }
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(text)
        hasher.combine(comment)
        for url in urls { hasher.combine(url.id); hasher.combine(url.url) }
        for user in userText { hasher.combine(user.description); hasher.combine(user.text) }
    }
}

/// Renders tags with libid3tag: ID3v2.4 (the only v2 it writes), UTF-8 text, no CRC or
/// compression; or the 128-byte ID3v1.1 tag.
package enum ID3Writer {
    /// The ID3v2.4 tag. With `paddedLength`, the tag is padded to exactly that many bytes when it
    /// fits (so it can be written over a reserved region), else rendered at its natural size.
    package static func render(_ content: ID3TagContent, paddedLength: Int? = nil) -> [UInt8] {
        render(content, options: 0, paddedLength: paddedLength)
    }

    /// Convenience for text-only tags.
    package static func render(_ frames: ID3TextFrames) -> [UInt8] {
        render(ID3TagContent(text: frames))
    }

    /// The ID3v1.1 tag (title, artist, album, comment, track; Latin-1, truncated by the format).
    package static func renderV1(_ content: ID3TagContent) -> [UInt8] {
        render(content, options: Int32(ID3_TAG_OPTION_ID3V1), paddedLength: nil)
    }

    private static func render(_ content: ID3TagContent, options: Int32, paddedLength: Int?) -> [UInt8] {
        guard let tag = id3_tag_new() else { return [] }
        defer { id3_tag_delete(tag) }
        id3_tag_options(tag, Int32(ID3_TAG_OPTION_COMPRESSION | ID3_TAG_OPTION_CRC | ID3_TAG_OPTION_ID3V1), options)
        for (id, text) in content.text.frames {
            attach(id, to: tag) { frame in setText(text, in: frame) }
        }
        for (id, url) in content.urls where url.allSatisfy(\.isASCII) {
            attach(id, to: tag) { frame in
                guard let field = id3_frame_field(frame, 0) else { return false }
                return url.withCString { id3_field_setlatin1(field, UnsafeRawPointer($0).assumingMemoryBound(to: id3_latin1_t.self)) } == 0
            }
        }
        if let comment = content.comment {
            attach("COMM", to: tag) { frame in setComment(comment, in: frame) }
        }
        for (description, text) in content.userText {
            attach("TXXX", to: tag) { frame in setUserText(text, description: description, in: frame) }
        }
        if let paddedLength {
            id3_tag_setlength(tag, id3_length_t(paddedLength))
        }
        // With a length set, libid3tag pads to it; a tag larger than that renders at its own size.
        let length = id3_tag_render(tag, nil)
        guard length > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { id3_tag_render(tag, $0.baseAddress) }
        return Array(bytes.prefix(Int(written)))
    }

    private static func attach(_ id: String, to tag: UnsafeMutablePointer<id3_tag>, _ fill: (UnsafeMutablePointer<id3_frame>) -> Bool) {
        guard let frame = id3_frame_new(id) else { return }
        if fill(frame) { id3_tag_attachframe(tag, frame) }
        id3_frame_delete(frame)
    }

    /// A NUL inside `text` (a station's title may hold one) would end the C string there: it
    /// goes in as a space, so the rest of the title is kept.
    private static func withUCS4<T>(_ text: String, _ body: (UnsafeMutablePointer<id3_ucs4_t>) -> T) -> T? {
        let text = text.contains("\0") ? String(String.UnicodeScalarView(text.unicodeScalars.map { $0 == "\0" ? " " : $0 })) : text
        guard let ucs4 = text.withCString({ id3_utf8_ucs4duplicate(UnsafeRawPointer($0).assumingMemoryBound(to: id3_utf8_t.self)) }) else {
            return nil
        }
        defer { free(ucs4) }
        return body(ucs4)
    }

    private static func setText(_ text: String, in frame: UnsafeMutablePointer<id3_frame>) -> Bool {
        guard frame.pointee.nfields >= 2,
              let encoding = id3_frame_field(frame, 0),
              let strings = id3_frame_field(frame, 1) else { return false }
        id3_field_settextencoding(encoding, ID3_FIELD_TEXTENCODING_UTF_8)
        return withUCS4(text) { ucs4 in
            var list: UnsafeMutablePointer<id3_ucs4_t>? = ucs4
            return id3_field_setstrings(strings, 1, &list) == 0
        } ?? false
    }

    /// TXXX: encoding, description, value.
    private static func setUserText(_ text: String, description: String, in frame: UnsafeMutablePointer<id3_frame>) -> Bool {
        guard frame.pointee.nfields >= 3,
              let encoding = id3_frame_field(frame, 0),
              let name = id3_frame_field(frame, 1),
              let value = id3_frame_field(frame, 2) else { return false }
        id3_field_settextencoding(encoding, ID3_FIELD_TEXTENCODING_UTF_8)
        let named = withUCS4(description) { id3_field_setstring(name, $0) == 0 } ?? false
        let valued = withUCS4(text) { id3_field_setstring(value, $0) == 0 } ?? false
        return named && valued
    }

    private static func setComment(_ text: String, in frame: UnsafeMutablePointer<id3_frame>) -> Bool {
        guard frame.pointee.nfields >= 4,
              let encoding = id3_frame_field(frame, 0),
              let language = id3_frame_field(frame, 1),
              let description = id3_frame_field(frame, 2),
              let body = id3_frame_field(frame, 3) else { return false }
        id3_field_settextencoding(encoding, ID3_FIELD_TEXTENCODING_UTF_8)
        id3_field_setlanguage(language, "eng")
        let empty = withUCS4("") { id3_field_setstring(description, $0) == 0 } ?? false
        let full = withUCS4(text) { id3_field_setfullstring(body, $0) == 0 } ?? false
        return empty && full
    }
}

extension UInt8 {
    fileprivate var toCChar: CChar { CChar(bitPattern: self) }
}
