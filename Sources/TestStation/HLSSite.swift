/// What the station answers under `/hls/`: a master playlist, and for each variant a media
/// playlist and its segments, live (a sliding window that moves on with the clock) or VOD.
///
/// Pure: the caller passes the seconds since the station started, so a test can ask for any
/// moment without waiting for it.
///
/// Paths: `/hls/master.m3u8`, `/hls/VARIANT/index.m3u8`, `/hls/VARIANT/segN.EXT` (and
/// `/hls/VARIANT/init.mp4` for fMP4).
package struct HLSSite: Sendable {
    package struct Variant: Sendable {
        package let name: String
        /// Bits per second, for the master playlist.
        package let bandwidth: Int
        /// RFC 6381, e.g. `mp4a.40.2` or `mp4a.40.34` (MP3).
        package let codecs: String
        package let packager: HLSPackager

        package init(name: String, bandwidth: Int, codecs: String, packager: HLSPackager) {
            self.name = name
            self.bandwidth = bandwidth
            self.codecs = codecs
            self.packager = packager
        }
    }

    package struct Response: Sendable, Hashable {
        package let status: Int
        package let contentType: String
        package let body: [UInt8]
    }

    package let variants: [Variant]
    package let isVOD: Bool
    /// Segments encrypted with AES-128 (key at `/hls/VARIANT/key`, IV from the sequence number).
    package let isEncrypted: Bool
    /// Segments in a live playlist.
    package let windowSegments: Int

    package init(variants: [Variant], isVOD: Bool, windowSegments: Int = 6, isEncrypted: Bool = false) {
        self.variants = variants
        self.isVOD = isVOD
        self.isEncrypted = isEncrypted
        self.windowSegments = max(1, windowSegments)
    }

    /// One variant per program (highest bitrate first), named by bitrate: `/hls/128k/index.m3u8`.
    package static func make(programs: [(program: StationProgram, bitrate: Int)], codec: StationCodec, container: HLSPackager.Container,
                             titles: HLSPackager.TitlePlacement, segmentSeconds: Double, isVOD: Bool,
                             windowSegments: Int = 6, isEncrypted: Bool = false) throws(StationError) -> HLSSite {
        var variants: [Variant] = []
        for (program, bitrate) in programs.sorted(by: { $0.bitrate > $1.bitrate }) {
            let packager = try HLSPackager(program: program, codec: codec, container: container, titles: titles, segmentSeconds: segmentSeconds)
            variants.append(Variant(name: "\(bitrate)k", bandwidth: bitrate * 1000, codecs: codec == .aac ? "mp4a.40.2" : "mp4a.40.34",
                                    packager: packager))
        }
        return HLSSite(variants: variants, isVOD: isVOD, windowSegments: windowSegments, isEncrypted: isEncrypted)
    }

    /// The sequence numbers a live playlist lists at `elapsedSeconds`: the stream is taken to
    /// have been running for one window already when the station starts.
    package func liveWindow(_ packager: HLSPackager, elapsedSeconds: Double) -> Range<Int> {
        let averageSeconds = packager.segments.map(\.duration).reduce(0, +) / Double(packager.segments.count)
        let edge = windowSegments + Int(max(0, elapsedSeconds) / averageSeconds)
        return (edge - windowSegments)..<edge
    }

    /// The answer for `path` (query already removed); nil when the path is not under `/hls/`.
    package func response(path: String, elapsedSeconds: Double) -> Response? {
        guard path.hasPrefix("/hls/") else { return nil }
        let parts = path.dropFirst("/hls/".count).split(separator: "/", omittingEmptySubsequences: false)
        if parts == ["master.m3u8"] {
            let text = HLSPackager.masterPlaylist(variants: variants.map { ("\($0.name)/index.m3u8", $0.bandwidth, $0.codecs) })
            return Response(status: 200, contentType: "application/vnd.apple.mpegurl", body: Array(text.utf8))
        }
        guard parts.count == 2, let variant = variants.first(where: { $0.name == parts[0] }) else { return notFound }
        let packager = variant.packager
        let file = parts[1]
        let window = isVOD ? 0..<packager.segments.count : liveWindow(packager, elapsedSeconds: elapsedSeconds)
        if file == "init.mp4", let initSegment = packager.initSegment {
            return Response(status: 200, contentType: "video/mp4", body: initSegment)
        }
        if file == "key", isEncrypted {
            return Response(status: 200, contentType: "application/octet-stream", body: HLSSegmentEncryption.key)
        }
        if file == "index.m3u8" {
            var text = packager.mediaPlaylist(window: window, endList: isVOD)
            if isEncrypted {
                // Before the first segment (or the map): every segment is encrypted.
                let key = "#EXT-X-KEY:METHOD=AES-128,URI=\"key\"\n"
                if let first = text.range(of: "#EXT-X-MAP") ?? text.range(of: "#EXTINF") { text.insert(contentsOf: key, at: first.lowerBound) }
            }
            return Response(status: 200, contentType: "application/vnd.apple.mpegurl", body: Array(text.utf8))
        }
        let suffix = ".\(packager.fileExtension)"
        guard file.hasPrefix("seg"), file.hasSuffix(suffix),
              let sequence = Int(file.dropFirst(3).dropLast(suffix.count)), sequence >= 0 else { return notFound }
        // A live server keeps segments a while after they leave the window (RFC 8216 6.2.2), and
        // has none from the future.
        let available = isVOD ? window : max(0, window.lowerBound - windowSegments)..<window.upperBound
        guard available.contains(sequence) else { return notFound }
        let contentType = switch packager.container {
        case .mpegTS: "video/mp2t"
        case .fmp4: "video/iso.segment"
        case .packedAudio: packager.fileExtension == "aac" ? "audio/aac" : "audio/mpeg"
        }
        var body = packager.segmentBytes(sequence)
        if isEncrypted {
            guard let encrypted = HLSSegmentEncryption.encrypt(body, iv: HLSSegmentEncryption.iv(forSequence: sequence)) else {
                return Response(status: 500, contentType: "text/plain; charset=utf-8", body: Array("500 cannot encrypt\n".utf8))
            }
            body = encrypted
        }
        return Response(status: 200, contentType: contentType, body: body)
    }

    private var notFound: Response {
        Response(status: 404, contentType: "text/plain; charset=utf-8", body: Array("404 Not Found\n".utf8))
    }
}
