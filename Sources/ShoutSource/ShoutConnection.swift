import CShout

/// One source connection to an Icecast (or SHOUTcast v1) server through libshout: airtap as a
/// source client, the way ices or ezstream feed a mount.
///
/// Blocking calls (connect, send): use it from one thread, the push sink's queue, never the
/// ingest loop. It owns a `shout_t`, so it is not Sendable.
package final class ShoutConnection {
    /// The server's kind and where to log in.
    package struct Server: Sendable, Hashable {
        package enum Dialect: Sendable, Hashable {
            /// Icecast 2: HTTP PUT/SOURCE to a mount, user and password.
            case icecast
            /// SHOUTcast v1: the ICY source protocol, a password only, one stream per port.
            case shoutcast
        }

        package let dialect: Dialect
        package let host: String
        package let port: Int
        /// Icecast's mount point, with its leading slash; ignored for SHOUTcast.
        package let mount: String
        package let user: String

        package init(dialect: Dialect, host: String, port: Int, mount: String, user: String) {
            self.dialect = dialect
            self.host = host
            self.port = port
            self.mount = mount
            self.user = user
        }
    }

    /// What the stream is, for the server's Content-Type and directory listings.
    package struct StreamInfo: Sendable, Hashable {
        package enum Format: Sendable, Hashable { case mp3, ogg }

        package var format: Format
        package var name: String?
        package var genre: String?
        package var url: String?
        package var bitrateKbps: Int?
        package var userAgent: String

        package init(format: Format, name: String? = nil, genre: String? = nil, url: String? = nil, bitrateKbps: Int? = nil,
                    userAgent: String) {
            self.format = format
            self.name = name
            self.genre = genre
            self.url = url
            self.bitrateKbps = bitrateKbps
            self.userAgent = userAgent
        }
    }

    package struct ShoutError: Error, Sendable, Hashable, CustomStringConvertible {
        package enum Kind: Sendable, Hashable {
            /// Nothing listens there, or the connection broke before the login.
            case cannotConnect
            /// The server answered and refused the source: a wrong password or a mount in use.
            case loginRefused
            /// The connection went away while sending.
            case disconnected
            /// A setting libshout refused (a name it cannot send, an option it lacks).
            case configuration
        }

        package let kind: Kind
        /// libshout's own words (never the password: libshout does not put it in errors).
        package let detail: String

        package var description: String { detail }

        package init(kind: Kind, detail: String) {
            self.kind = kind
            self.detail = detail
        }
    }

    private let library: ShoutLibrary
    private let handle: OpaquePointer
    package private(set) var isOpen = false

    package init(server: Server, password: String, info: StreamInfo) throws(ShoutError) {
        let library = try ShoutLibrary.shared.get()
        guard let handle = library.new() else { throw ShoutError(kind: .configuration, detail: "libshout: out of memory") }
        self.library = library
        self.handle = handle
        var result = library.setHost(handle, server.host)
        if result == SHOUTERR_SUCCESS { result = library.setPort(handle, UInt16(clamping: server.port)) }
        if result == SHOUTERR_SUCCESS { result = library.setPassword(handle, password) }
        if result == SHOUTERR_SUCCESS { result = library.setAgent(handle, info.userAgent) }
        if result == SHOUTERR_SUCCESS { result = library.setTLS(handle, SHOUT_TLS_DISABLED) }
        switch server.dialect {
        case .icecast:
            if result == SHOUTERR_SUCCESS { result = library.setProtocol(handle, UInt32(SHOUT_PROTOCOL_HTTP)) }
            if result == SHOUTERR_SUCCESS { result = library.setUser(handle, server.user) }
            if result == SHOUTERR_SUCCESS { result = library.setMount(handle, server.mount) }
        case .shoutcast:
            if result == SHOUTERR_SUCCESS { result = library.setProtocol(handle, UInt32(SHOUT_PROTOCOL_ICY)) }
        }
        let format = info.format == .mp3 ? SHOUT_FORMAT_MP3 : SHOUT_FORMAT_OGG
        if result == SHOUTERR_SUCCESS { result = library.setContentFormat(handle, UInt32(format), UInt32(SHOUT_USAGE_AUDIO), nil) }
        for (key, value) in [("name", info.name), ("genre", info.genre), ("url", info.url)] {
            guard result == SHOUTERR_SUCCESS, let value, !value.isEmpty else { continue }
            result = library.setMeta(handle, key, value)
        }
        if result == SHOUTERR_SUCCESS, let bitrate = info.bitrateKbps {
            result = library.setAudioInfo(handle, SHOUT_AI_BITRATE, String(bitrate))
        }
        guard result == SHOUTERR_SUCCESS else {
            let detail = Self.errorText(library, handle)
            library.free(handle)
            throw ShoutError(kind: .configuration, detail: "libshout: \(detail)")
        }
    }

    deinit {
        if isOpen { _ = library.close(handle) }
        library.free(handle)
    }

    /// Connects and logs in as the mount's source.
    package func open() throws(ShoutError) {
        guard !isOpen else { return }
        let result = library.open(handle)
        guard result == SHOUTERR_SUCCESS || result == SHOUTERR_CONNECTED else {
            throw error(for: result)
        }
        isOpen = true
    }

    package func close() {
        guard isOpen else { return }
        _ = library.close(handle)
        isOpen = false
    }

    /// Sends audio as it comes: a live relay is paced by its upstream, so no shout_sync.
    package func send(_ bytes: UnsafeRawBufferPointer) throws(ShoutError) {
        guard isOpen else { throw ShoutError(kind: .disconnected, detail: "not connected") }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let result = library.send(handle, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        guard result == SHOUTERR_SUCCESS else {
            let failure = error(for: result)
            close()
            throw ShoutError(kind: .disconnected, detail: failure.detail)
        }
    }

    /// The title listeners see from now on (Icecast's metadata update, in UTF-8). Not for Ogg:
    /// an Ogg stream carries its titles in its own links.
    ///
    /// A NUL inside `title` (a station's title may hold one) would end libshout's C string
    /// there: it goes out as a space, so the rest of the title reaches the listeners.
    package func setTitle(_ title: String) throws(ShoutError) {
        guard isOpen else { return }
        let title = title.contains("\0") ? String(String.UnicodeScalarView(title.unicodeScalars.map { $0 == "\0" ? " " : $0 })) : title
        guard let metadata = library.metadataNew() else { throw ShoutError(kind: .configuration, detail: "libshout: out of memory") }
        defer { library.metadataFree(metadata) }
        var result = library.metadataAdd(metadata, "song", title)
        if result == SHOUTERR_SUCCESS { result = library.setMetadataUTF8(handle, metadata) }
        guard result == SHOUTERR_SUCCESS else { throw error(for: result) }
    }

    private func error(for result: Int32) -> ShoutError {
        let detail = Self.errorText(library, handle)
        switch result {
        case SHOUTERR_NOLOGIN: return ShoutError(kind: .loginRefused, detail: detail)
        case SHOUTERR_NOCONNECT: return ShoutError(kind: .cannotConnect, detail: detail)
        case SHOUTERR_SOCKET, SHOUTERR_UNCONNECTED: return ShoutError(kind: .disconnected, detail: detail)
        default: return ShoutError(kind: .configuration, detail: detail)
        }
    }

    private static func errorText(_ library: ShoutLibrary, _ handle: OpaquePointer) -> String {
        library.error(handle).map { String(cString: $0) } ?? "unknown error"
    }
}
