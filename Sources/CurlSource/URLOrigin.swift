import CCurl

/// Where a URL points: its scheme, host and port, as curl reads them (the port filled in when the
/// URL has none), lowercased. What a request's credentials and headers are bound to: compared by
/// the same parser curl connects with, a URL that another parser reads differently cannot lead
/// them elsewhere.
package enum URLOrigin {
    package static func of(_ url: String) -> String? {
        guard let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else { return nil }
        func part(_ which: CURLUPart, flags: UInt32 = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, which, &value, flags) == CURLUE_OK, let value else { return nil }
            defer { curl_free(value) }
            return String(cString: value)
        }
        guard let scheme = part(CURLUPART_SCHEME), let host = part(CURLUPART_HOST),
              let port = part(CURLUPART_PORT, flags: UInt32(CURLU_DEFAULT_PORT)) else { return nil }
        return "\(scheme.lowercased())://\(host.lowercased()):\(port)"
    }
}
