import ICYWire

/// Puts an Ogg Skeleton 4.0 stream beside one audio link, as oggz and ffmpeg2theora lay it
/// out: the fishead BOS page first, then the audio's BOS page, a fisbone page describing the
/// audio stream, the audio's other header pages, the Skeleton's EOS page (an empty packet),
/// then the audio pages. The audio pages are left as they are.
enum OggSkeletonWrapper {
    static func wrap(_ link: [UInt8], trackIndex: Int) throws(StationError) -> [UInt8] {
        var pages: [OggPage] = []
        var position = 0
        while position < link.count {
            guard case .page(let page) = OggPage.parse(link[position...]) else {
                throw .encoding("track \(trackIndex) is not whole Ogg pages at byte \(position)")
            }
            pages.append(page)
            position += page.bytes.count
        }
        var reader = OggLinkReader()
        var headerPageCount = 0
        var audio: OggLink?
        for page in pages where audio == nil {
            headerPageCount += 1
            if case .linkStarted(let started) = reader.read(page) { audio = started }
        }
        guard let audio else { throw .encoding("track \(trackIndex) has no whole link to put Skeleton beside") }

        let serial = audio.serialNumber ^ 0x5EE1_E70D
        let head = fishead()
        let bone = fisbone(for: audio)
        var output = OggPage.build(flags: .beginningOfStream, granulePosition: 0, serialNumber: serial, sequenceNumber: 0,
                                   lacing: [UInt8(head.count)], body: head)
        output += pages[0].bytes
        output += OggPage.build(flags: [], granulePosition: 0, serialNumber: serial, sequenceNumber: 1,
                                lacing: [UInt8(bone.count)], body: bone)
        for page in pages[1..<headerPageCount] { output += page.bytes }
        output += OggPage.build(flags: .endOfStream, granulePosition: 0, serialNumber: serial, sequenceNumber: 2,
                                lacing: [0], body: [])
        for page in pages[headerPageCount...] { output += page.bytes }
        return output
    }

    /// "fishead\0", version 4.0, presentation and base time 0/1000, no UTC, no index.
    static func fishead() -> [UInt8] {
        var packet = Array("fishead\0".utf8)
        appendLittleEndian(4, bytes: 2, to: &packet)
        appendLittleEndian(0, bytes: 2, to: &packet)
        for value: UInt64 in [0, 1000, 0, 1000] { appendLittleEndian(value, bytes: 8, to: &packet) }
        packet += [UInt8](repeating: 0, count: 20)
        appendLittleEndian(0, bytes: 8, to: &packet)  // segment length
        appendLittleEndian(0, bytes: 8, to: &packet)  // content byte offset
        return packet
    }

    /// "fisbone\0" for the audio stream: its serial, header count, granule rate, and its
    /// Content-Type as a message header.
    static func fisbone(for link: OggLink) -> [UInt8] {
        var packet = Array("fisbone\0".utf8)
        appendLittleEndian(44, bytes: 4, to: &packet)  // the message headers start 44 bytes after this field
        appendLittleEndian(UInt64(link.serialNumber), bytes: 4, to: &packet)
        appendLittleEndian(UInt64(link.headerPackets.count), bytes: 4, to: &packet)
        appendLittleEndian(UInt64(link.info.sampleRate), bytes: 8, to: &packet)  // granule rate numerator
        appendLittleEndian(1, bytes: 8, to: &packet)  // and denominator
        appendLittleEndian(0, bytes: 8, to: &packet)  // base granule
        appendLittleEndian(link.info.codec == .opus ? 3840 : 2, bytes: 4, to: &packet)  // preroll
        packet += [0, 0, 0, 0]  // granule shift, padding
        let type = link.info.codec == .opus ? "audio/opus" : "audio/vorbis"
        packet += Array("Content-Type: \(type)\r\nRole: audio/main\r\nName: audio_0\r\n".utf8)
        return packet
    }

    private static func appendLittleEndian(_ value: UInt64, bytes count: Int, to output: inout [UInt8]) {
        for index in 0..<count { output.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }
}
