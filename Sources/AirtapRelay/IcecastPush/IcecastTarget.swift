import AirtapKit
import AirtapSupport
import FoundationEssentials
import Glibc
import ICYWire
import ShoutSource
import SystemPackage

/// Where `relay --to` sends a stream as a source client: `icecast://USER@HOST:PORT/MOUNT` (user
/// `source` when omitted) or `shoutcast://HOST:PORT` (SHOUTcast v1: a password only).
///
/// The password never goes in the URL: it would show in `ps` and in shell history. It comes
/// from `--password-file` or `AIRTAP_ICECAST_PASSWORD`. No error repeats a password that was put
/// there all the same.
package struct IcecastTarget: Sendable, Hashable, CustomStringConvertible {
    package let server: ShoutConnection.Server
    /// The user as the URL wrote it (percent-encoded), for `description`.
    private let userAsWritten: String

    /// nil when `text` is not a URL (a file name, `-`).
    package static func parse(_ text: String) throws(AirtapError) -> IcecastTarget? {
        let lowered = text.lowercased()
        let dialect: ShoutConnection.Server.Dialect
        if lowered.hasPrefix("icecast://") {
            dialect = .icecast
        } else if lowered.hasPrefix("shoutcast://") {
            dialect = .shoutcast
        } else if hasOtherScheme(text) {
            throw .usage("--to \(redacted(text)): relay writes to a file, to - (stdout), or to icecast://source@HOST:PORT/MOUNT or shoutcast://HOST:PORT")
        } else {
            return nil
        }
        let shown = redacted(text)
        guard let components = URLComponents(string: text), let host = components.host, !host.isEmpty else {
            throw .usage("--to \(shown): not a valid URL (icecast://source@HOST:PORT/MOUNT or shoutcast://HOST:PORT)")
        }
        guard components.password == nil, !(components.percentEncodedUser.map(hidesPassword) ?? false) else {
            throw .usage("--to: put the source password in --password-file or AIRTAP_ICECAST_PASSWORD, not in the URL (it would show in ps)")
        }
        let port = components.port ?? 8000
        guard (1...65535).contains(port) else { throw .usage("--to \(shown): port \(port) is out of range") }
        guard components.query == nil, components.fragment == nil else {
            throw .usage("--to \(shown): a source URL takes no query or fragment")
        }
        let path = components.path
        switch dialect {
        case .icecast:
            guard path.count > 1, path.hasPrefix("/") else {
                throw .usage("--to \(shown): name the mount (icecast://source@\(host):\(port)/MOUNT)")
            }
        case .shoutcast:
            guard path.isEmpty || path == "/" else {
                throw .usage("--to \(shown): SHOUTcast v1 servers have no mounts (shoutcast://\(host):\(port))")
            }
        }
        let written = components.percentEncodedUser.flatMap { $0.isEmpty ? nil : $0 }
        guard let user = written.map({ PercentDecoding.strict($0) }) ?? "source" else {
            throw .usage("--to \(shown): the user name is not percent-encoded UTF-8")
        }
        return IcecastTarget(server: .init(dialect: dialect, host: host, port: port, mount: path, user: user),
                             userAsWritten: written ?? "source")
    }

    /// The URL without any secret: safe for logs and errors.
    package var description: String {
        switch server.dialect {
        case .icecast: "icecast://\(userAsWritten)@\(server.host):\(server.port)\(server.mount)"
        case .shoutcast: "shoutcast://\(server.host):\(server.port)"
        }
    }

    /// Whether a user part carries a password however it is encoded: `source%3Asecret` decodes
    /// to `source:secret` (and libshout would send the whole of it as the user), `%253A` to that.
    static func hidesPassword(_ percentEncodedUser: String) -> Bool {
        var text = percentEncodedUser
        // Each round that changes the text shortens it; past a few, it is refused all the same.
        for _ in 0..<8 {
            if text.contains(":") { return true }
            guard let decoded = PercentDecoding.strict(text), decoded != text else { return false }
            text = decoded
        }
        return true
    }

    /// `text` as errors may show it: everything that could be a password in its user part
    /// replaced, for a URL that may not even parse (`user:pa/ss@`, `user%3Asecret@`, two `@`).
    /// Not `URLCredentials.split`: that one reads a valid station URL, whose authority ends at the
    /// first `/`, so in `user:pa/ss@host` it finds no `@` and would show `ss`; here the last `@`
    /// anywhere ends the user part, and a host that is masked by mistake costs nothing.
    static func redacted(_ text: String) -> String {
        guard let schemeEnd = text.firstRange(of: "://"), let at = text[schemeEnd.upperBound...].lastIndex(of: "@") else { return text }
        let userInfo = text[schemeEnd.upperBound..<at]
        let user = userInfo.prefix { !":%/?#[]".contains($0) }
        guard user.count < userInfo.count else { return text }
        return "\(text[..<schemeEnd.upperBound])\(user):***\(text[at...])"
    }

    /// `scheme://...` with a scheme other than ours: a mistyped push, not a file name.
    private static func hasOtherScheme(_ text: String) -> Bool {
        guard let schemeEnd = text.firstRange(of: "://") else { return false }
        let scheme = text[..<schemeEnd.lowerBound]
        return !scheme.isEmpty && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// The source password, and a warning when the file it came from is open to every user.
    package struct Password: Sendable, CustomStringConvertible {
        package let value: String
        /// One line for the log: the password file can be read by any user of the machine.
        package let warning: String?

        package var description: String { "(a source password)" }
    }

    /// The longest password file read: one line of text, with room to spare.
    static let maxPasswordFileBytes = 4096

    /// The source password: the first line of `file`, else `AIRTAP_ICECAST_PASSWORD`.
    package static func password(file: String?, environment: [String: String]) throws(AirtapError) -> Password {
        if let file {
            let (data, mode) = try readPasswordFile(file)
            guard let text = String(validating: data, as: UTF8.self) else {
                throw .configuration("\(file): not a password file (one line of text)")
            }
            let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let password = line.hasSuffix("\r") ? String(line.dropLast()) : line
            guard !password.isEmpty else { throw .configuration("\(file): the password is empty") }
            // As ssh says of a private key: readable by others is no secret. A warning, not a
            // refusal: the push still works, and the user decides.
            let warning = mode & S_IROTH != 0
                ? "the password file \(file) is readable by every user (mode \(octal(mode & 0o7777))): chmod 600 it" : nil
            return Password(value: password, warning: warning)
        }
        if let password = environment["AIRTAP_ICECAST_PASSWORD"], !password.isEmpty { return Password(value: password, warning: nil) }
        throw .usage("--to icecast://...: give the source password with --password-file FILE or AIRTAP_ICECAST_PASSWORD")
    }

    /// At most `maxPasswordFileBytes` of `file` (a file, or a pipe such as `<(pass show icecast)`)
    /// and its mode, from one open descriptor.
    private static func readPasswordFile(_ file: String) throws(AirtapError) -> ([UInt8], mode_t) {
        let cannotRead = AirtapError.configuration("cannot read the password file \(file)")
        guard let descriptor = try? FileDescriptor.open(file, .readOnly, options: [.closeOnExec]) else {
            throw cannotRead
        }
        defer { try? descriptor.close() }
        var status = stat()
        guard fstat(descriptor.rawValue, &status) == 0, status.st_mode & S_IFMT != S_IFDIR else { throw cannotRead }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: maxPasswordFileBytes + 1)
        while bytes.count <= maxPasswordFileBytes {
            let want = maxPasswordFileBytes + 1 - bytes.count
            guard let count = try? chunk.withUnsafeMutableBytes({ try descriptor.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[..<want])) }) else {
                throw cannotRead
            }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        guard bytes.count <= maxPasswordFileBytes else { throw .configuration("\(file): not a password file (one line of text)") }
        return (bytes, status.st_mode)
    }

    private static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
