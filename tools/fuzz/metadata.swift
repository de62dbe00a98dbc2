// StreamMetadata.parse, TextDecoding and what the recorder does with a title next
// (TrackInfo, FileNameTemplate.render, SafeFileName): strangers' bytes all the way to a path.
// Input: [charset selector][metadata block...]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMetadata(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let charsets = TextCharset.allCases
    let charset = charsets[Int(input.takeByte()) % charsets.count]
    let block = input.rest

    // Text decoding never fails, and valid UTF-8 is always taken as UTF-8.
    let valid = String(validating: block, as: UTF8.self)
    for fallback in charsets {
        let text = TextDecoding.decode(block, fallback: fallback)
        if let valid {
            require(text == valid, "valid UTF-8 not kept")
        } else {
            require(text.unicodeScalars.count == block.count, "single-byte decoding must map byte for byte")
        }
    }

    let metadata = StreamMetadata.parse(block, charset: charset)
    // The same block as a slice with NUL padding parses the same.
    let padded = block + [UInt8](repeating: 0, count: (16 - block.count % 16) % 16)
    require(StreamMetadata.parse(padded[...], charset: charset) == metadata || block.contains(0), "NUL padding changes the fields")
    for field in metadata.fields {
        require(!field.key.isEmpty, "empty key")
        require(field.key.utf8.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: "=") && $0 != UInt8(ascii: ";") }, "key \(field.key)")
        // A value may hold a NUL of the station's: the renderers make it inert.
        require(InertText.render(field.value).utf8.allSatisfy { $0 >= 0x20 }, "a control character survives InertText")
    }

    let track = TrackInfo(metadata)
    if let artist = track.artist { require(!artist.isEmpty, "empty artist") }

    let fields = TrackNameFields(station: track.url ?? "station", artist: track.artist, title: track.title,
                                 date: "2026-11-22", time: "22-05-13", seq: 1)
    let templates = [FileNameTemplate.standard, try! FileNameTemplate("{artist} - {title}"),
                     try! FileNameTemplate("{title}/{station}/{seq} {artist}")]
    for template in templates {
        let components = template.render(fields)
        require(!components.isEmpty, "no components")
        for component in components { checkComponent(component) }
    }
    for text in [track.raw, track.title, metadata.streamURL ?? ""] {
        if let component = SafeFileName.component(text) { checkComponent(component) }
        if let component = SafeFileName.component(text, maxBytes: 7) {
            require(component.utf8.count <= 7, "maxBytes 7")
            require(SafeFileName.numbered(component, 12, maxBytes: 10).utf8.count <= 10 || component.utf8.count > 10, "numbered")
        }
    }
    return 0
}

/// The promises of FileNameTemplate.render: one safe path component.
func checkComponent(_ component: String) {
    require(!component.isEmpty, "empty component")
    require(component != "." && component != "..", "dot component")
    require(component.utf8.count <= 200, "component of \(component.utf8.count) bytes")
    require(!component.contains("/") && !component.contains("\\"), "separator in \(component.debugDescription)")
    require(!component.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "control character in \(component.debugDescription)")
    require(!component.hasPrefix(".") && !component.hasPrefix("-"), "leading dot or dash in \(component.debugDescription)")
}
