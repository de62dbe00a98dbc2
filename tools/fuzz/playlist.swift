// Playlist.entries (PLS, M3U, sniffed) with and without a base URL, and Playlist.format.
// Input: [format selector][text...]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlaylist(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let selector = input.takeByte()
    let format: PlaylistFormat? = [nil, .pls, .m3u][Int(selector % 3)]
    let text = String(decoding: input.rest, as: UTF8.self)
    let bases: [String?] = [nil, "http://radio.example:8000/dir/list.m3u?x=1#f", "https://h", "relative/path", "x:"]
    let base = bases[Int(selector / 3) % bases.count]

    do {
        let entries = try Playlist.entries(in: text, format: format, baseURL: base)
        require(!entries.isEmpty, "entries without an error, but none")
        for entry in entries {
            require(!entry.isEmpty, "empty entry")
            require(!entry.contains("\n") && !entry.contains("\r"), "newline in an entry")
        }
    } catch {
        // .hlsNotSupported and .noEntries are the answers for bad playlists.
    }
    _ = Playlist.format(forURL: text)
    return 0
}
