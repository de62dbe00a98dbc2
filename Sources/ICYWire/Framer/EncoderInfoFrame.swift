/// Recognises an encoder's metadata frame inside a stream: the silent Layer III frame that LAME
/// ("Info" for constant, "Xing" for variable bitrate) or Fraunhofer ("VBRI") writes at the start
/// of a file, carrying the file's frame and byte counts rather than audio.
///
/// Playout systems (ezstream and many others) send each file as it is, so one arrives at every
/// track start. It is metadata for a file that no longer exists: a recording with it inside shows
/// the wrong length (players trust the first one they meet), and a relay passes the lie on. The
/// ingest drops it; a recorder writes its own (`XingFrame`).
///
/// The marker sits right after the side information (Xing/Info; after the CRC when there is one)
/// or at a fixed 32 bytes after the header (VBRI), as decoders look for it. Only the first
/// bytes of a frame are read; nothing is allocated.
package enum EncoderInfoFrame {
    /// Whether `frame` (one whole frame, header first) is such a frame.
    package static func isInfoFrame(_ frame: ArraySlice<UInt8>, header: AudioFrameHeader) -> Bool {
        guard case .mpeg(let mpeg) = header, mpeg.layer == .layer3 else { return false }
        let xingOffset = 4 + (mpeg.hasCRC ? 2 : 0) + mpeg.layer3SideInfoLength
        return hasMarker(frame, at: xingOffset, "Xing") || hasMarker(frame, at: xingOffset, "Info")
            || hasMarker(frame, at: 4 + 32, "VBRI")
    }

    private static func hasMarker(_ frame: ArraySlice<UInt8>, at offset: Int, _ marker: StaticString) -> Bool {
        let start = frame.startIndex + offset
        guard offset >= 0, start + 4 <= frame.endIndex else { return false }
        let expected = UnsafeRawBufferPointer(start: marker.utf8Start, count: marker.utf8CodeUnitCount)
        for index in 0..<4 where frame[start + index] != expected[index] { return false }
        return true
    }
}
