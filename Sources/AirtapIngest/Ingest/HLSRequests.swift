import CurlSource
import ICYWire

/// How an HLS station's feed asks for its playlists, keys and segments. The station's password
/// and the user's headers (an Authorization, a Cookie, an API key) go only where the station's
/// URL pointed (scheme, host and port), never to a CDN or key server a playlist names, as a
/// transfer drops them on a redirect to another host (`CurlTransfer`); a URI with its own user
/// and password brings them.
struct HLSRequests: Sendable {
    let stationOrigin: String?
    let credentials: URLCredentials?
    let options: IngestOptions

    init(stationURL: String, credentials: URLCredentials?, options: IngestOptions) {
        self.stationOrigin = URLOrigin.of(stationURL)
        self.credentials = credentials
        self.options = options
    }

    func options(for url: String) -> TransferOptions {
        let (plain, own) = URLCredentials.split(url)
        let isStationOrigin = stationOrigin != nil && URLOrigin.of(plain) == stationOrigin
        return TransferOptions(url: plain, credentials: own ?? (isStationOrigin ? credentials : nil), userAgent: options.userAgent,
                               headers: isStationOrigin ? options.headers : [], requestsICYMetadata: false, proxy: options.proxy,
                               insecure: options.insecure, connectTimeout: options.connectTimeout, stallTimeout: options.stallTimeout)
    }
}
