// ResponseHead.parse and its derived ICY fields.
// Input: text; the first line is the status line, the rest header lines.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHead(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let text = String(decoding: input.rest, as: UTF8.self)
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let statusLine = lines.isEmpty ? "" : lines.removeFirst()
    guard let head = try? ResponseHead.parse(statusLine: statusLine, headerLines: lines) else { return 0 }

    require((0...999).contains(head.statusCode), "status \(head.statusCode)")  // three digits; 000 is the caller's to reject
    require(head.protocolName == "ICY" || head.protocolName.hasPrefix("HTTP/"), "protocol")
    for field in head.fields {
        require(!field.name.isEmpty, "empty name")
        require(head[field.name] != nil, "field not found by its own name")
    }
    if case .interval(let interval) = head.metaint { require(interval > 0, "metaint \(interval)") }
    if let rate = head.icyBitrate { require(rate >= 0, "bitrate") }
    if let type = head.contentType { require(!type.isEmpty && type == type.lowercased() && !type.contains(";"), "content type") }
    _ = (head.icyName, head.icyGenre, head.icyURL, head.icyDescription, head.server, head.isPublic, head.payload)
    return 0
}
