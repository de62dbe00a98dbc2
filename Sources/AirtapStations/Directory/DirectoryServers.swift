#if canImport(Glibc)
import Glibc
#endif
import AirtapSupport
import FoundationEssentials
import Locking

/// Which station-directory servers a request may go to. radio-browser has no main server: its
/// rule is to look up every address `all.api.radio-browser.info` has, take the name of each
/// (each server answers on `https://<its name>`), and spread requests over them in random order.
package enum DirectoryServers: Sendable, Hashable {
    /// These base URLs, in this order (`--directory URL`, `AIRTAP_DIRECTORY`: one).
    case fixed([String])
    /// The servers behind `host`'s addresses, as `scheme://<name>[:port]`.
    case resolved(host: String, scheme: String = "https", port: Int? = nil)

    /// The public directory.
    package static let publicDirectory = DirectoryServers.resolved(host: "all.api.radio-browser.info")

    /// `--directory URL`, else `AIRTAP_DIRECTORY`, else the public directory. A URL that is not
    /// http(s) is a usage error.
    package static func choose(commandLine: String?, environment: [String: String]) throws(AirtapError) -> DirectoryServers {
        let given = commandLine ?? environment["AIRTAP_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
        guard let given else { return publicDirectory }
        guard Station.isStreamURL(given) else {
            let source = commandLine == nil ? "AIRTAP_DIRECTORY" : "--directory"
            throw .usage("\(source): '\(given)' is not an http or https URL")
        }
        var base = given
        while base.hasSuffix("/") { base.removeLast() }
        return .fixed([base])
    }

    /// The base URLs to try, in the order to try them. Blocks while names are looked up (call
    /// it off the cooperative pool: `candidatesOffPool`). Never empty: when the lookup finds
    /// nothing, the host itself is the one candidate (curl then reports why it cannot reach it).
    package func candidates<Random: RandomNumberGenerator>(using random: inout Random) -> [String] {
        switch self {
        case .fixed(let urls):
            return urls
        case .resolved(let host, let scheme, let port):
            let suffix = port.map { ":\($0)" } ?? ""
            var names: [String] = []
            for name in Self.serverNames(of: host) where !names.contains(name) { names.append(name) }
            let urls = names.shuffled(using: &random).map { "\(scheme)://\($0)\(suffix)" }
            return urls.isEmpty ? ["\(scheme)://\(host)\(suffix)"] : urls
        }
    }

    /// `candidates`, with the lookup on a thread of its own: getaddrinfo can block for the
    /// resolver's whole timeout.
    package func candidatesOffPool() async -> [String] {
        if case .fixed(let urls) = self { return urls }
        return await withCheckedContinuation { continuation in
            let thread = PosixThread { [self] in
                var random = SystemRandomNumberGenerator()
                continuation.resume(returning: candidates(using: &random))
            }
            thread.name = "airtap-resolve"
            thread.start()
        }
    }

    /// The names of `host`'s addresses (reverse lookups); an address without a name is left
    /// out, since a server answers TLS only for its name. At most 16 addresses are looked at.
    static func serverNames(of host: String) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var names: [String] = []
        var entry = list
        var looked = 0
        while let current = entry, looked < 16 {
            looked += 1
            entry = current.pointee.ai_next
            guard let address = current.pointee.ai_addr else { continue }
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(address, current.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NAMEREQD) == 0 else {
                continue
            }
            let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
            // A reverse name is the DNS's text: only a plain host name becomes part of a URL.
            if Self.isHostName(name) { names.append(name) }
        }
        return names
    }

    static func isHostName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 253 && text.first != "." && text.first != "-"
            && text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "." || $0 == "-") }
    }
}
