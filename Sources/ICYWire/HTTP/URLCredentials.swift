/// The `user:password@` part of a station URL (RFC 3986 userinfo). airtap hands it to libcurl
/// apart from the URL and shows or stores only the URL without it: a station URL reaches file
/// tags, logs, errors and serve's /status, which any listener can read.
package struct URLCredentials: Sendable, Hashable, CustomStringConvertible {
    package let user: String
    package let password: String?

    package init(user: String, password: String?) {
        self.user = user
        self.password = password
    }

    /// Never the password, should a credential ever be interpolated into a message.
    package var description: String { "credentials for '\(user)'" }

    /// `url` without its userinfo, and the credentials that were in it (percent-decoded), if any.
    /// A string that is not `scheme://authority...` comes back unchanged.
    package static func split(_ url: String) -> (url: String, credentials: URLCredentials?) {
        guard let schemeEnd = url.firstRange(of: "://") else { return (url, nil) }
        let authorityStart = schemeEnd.upperBound
        let authorityEnd = url[authorityStart...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? url.endIndex
        // The last "@": a password may hold an unescaped "@", a host cannot.
        guard let at = url[authorityStart..<authorityEnd].lastIndex(of: "@") else { return (url, nil) }
        let userInfo = url[authorityStart..<at]
        let stripped = String(url[..<authorityStart] + url[url.index(after: at)...])
        guard !userInfo.isEmpty else { return (stripped, nil) }
        let colon = userInfo.firstIndex(of: ":")
        let user = percentDecoded(userInfo[..<(colon ?? userInfo.endIndex)])
        let password = colon.map { percentDecoded(userInfo[userInfo.index(after: $0)...]) }
        return (stripped, URLCredentials(user: user, password: password))
    }

    /// `url` as airtap shows it: without user and password.
    package static func redacted(_ url: String) -> String {
        split(url).url
    }

    /// `%XX` escapes decoded; a `%` not followed by two hex digits stays as it is.
    static func percentDecoded(_ text: Substring) -> String {
        PercentDecoding.lenient(text)
    }
}
