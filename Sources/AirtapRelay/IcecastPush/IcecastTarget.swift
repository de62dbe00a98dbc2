import AirtapKit
import FoundationEssentials
import ShoutSource

/// Where `relay --to` sends a stream as a source client: `icecast://USER@HOST:PORT/MOUNT` (user
/// `source` when omitted) or `shoutcast://HOST:PORT` (SHOUTcast v1: a password only).
///
/// The password never goes in the URL: it would show in `ps` and in shell history. It comes
/// from `--password-file` or `AIRTAP_ICECAST_PASSWORD`.
package struct IcecastTarget: Sendable, Hashable, CustomStringConvertible {
    package let server: ShoutConnection.Server

    /// nil when `text` is not an icecast:// or shoutcast:// URL (a file name, `-`).
    package static func parse(_ text: String) throws(AirtapError) -> IcecastTarget? {
        let lowered = text.lowercased()
        let dialect: ShoutConnection.Server.Dialect
        if lowered.hasPrefix("icecast://") {
            dialect = .icecast
        } else if lowered.hasPrefix("shoutcast://") {
            dialect = .shoutcast
        } else {
            return nil
        }
        guard let components = URLComponents(string: text), let host = components.host, !host.isEmpty else {
            throw .usage("--to \(text): not a valid URL (icecast://source@HOST:PORT/MOUNT or shoutcast://HOST:PORT)")
        }
        guard components.password == nil else {
            throw .usage("--to: put the source password in --password-file or AIRTAP_ICECAST_PASSWORD, not in the URL (it would show in ps)")
        }
        let port = components.port ?? 8000
        guard (1...65535).contains(port) else { throw .usage("--to \(text): port \(port) is out of range") }
        guard components.query == nil, components.fragment == nil else {
            throw .usage("--to \(text): a source URL takes no query or fragment")
        }
        let path = components.path
        switch dialect {
        case .icecast:
            guard path.count > 1, path.hasPrefix("/") else {
                throw .usage("--to \(text): name the mount (icecast://source@\(host):\(port)/MOUNT)")
            }
        case .shoutcast:
            guard path.isEmpty || path == "/" else {
                throw .usage("--to \(text): SHOUTcast v1 servers have no mounts (shoutcast://\(host):\(port))")
            }
        }
        let user = components.user.flatMap { $0.isEmpty ? nil : $0 } ?? "source"
        return IcecastTarget(server: .init(dialect: dialect, host: host, port: port, mount: path, user: user))
    }

    /// The URL without any secret: safe for logs and errors.
    package var description: String {
        switch server.dialect {
        case .icecast: "icecast://\(server.user)@\(server.host):\(server.port)\(server.mount)"
        case .shoutcast: "shoutcast://\(server.host):\(server.port)"
        }
    }

    /// The source password: the first line of `file`, else `AIRTAP_ICECAST_PASSWORD`.
    package static func password(file: String?, environment: [String: String]) throws(AirtapError) -> String {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw .configuration("cannot read the password file \(file)")
            }
            guard data.count <= 4096, let text = String(data: data, encoding: .utf8) else {
                throw .configuration("\(file): not a password file (one line of text)")
            }
            let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let password = line.hasSuffix("\r") ? String(line.dropLast()) : line
            guard !password.isEmpty else { throw .configuration("\(file): the password is empty") }
            return password
        }
        if let password = environment["AIRTAP_ICECAST_PASSWORD"], !password.isEmpty { return password }
        throw .usage("--to icecast://...: give the source password with --password-file FILE or AIRTAP_ICECAST_PASSWORD")
    }
}
