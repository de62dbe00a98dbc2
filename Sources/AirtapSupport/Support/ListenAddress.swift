/// `HOST:PORT`, `[IPv6]:PORT`, `:PORT` or `PORT` (the host then stays 127.0.0.1).
package struct ListenAddress: Sendable, Hashable {
    package var host: String
    package var port: Int

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    package init?(parsing text: String) {
        var host = "127.0.0.1"
        var portText = Substring(text)
        if let colon = text.lastIndex(of: ":") {
            var hostPart = text[..<colon]
            if hostPart.hasPrefix("["), hostPart.hasSuffix("]") { hostPart = hostPart.dropFirst().dropLast() }
            if !hostPart.isEmpty { host = String(hostPart) }
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), (0...65535).contains(port), !host.contains(where: \.isWhitespace) else { return nil }
        self.host = host
        self.port = port
    }

    package func display(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
