import AirtapSupport

/// How airtap asks for streams: the parts of a request that are not the URL.
package struct IngestOptions: Sendable, Hashable {
    package var userAgent: String
    package var headers: [String]
    package var proxy: String?
    package var insecure: Bool
    package var connectTimeout: Double
    package var stallTimeout: Double
    /// nil: a lost or failed connection ends the session (probe); else retried by this policy.
    package var reconnect: ReconnectPolicy?
    /// HLS: the best variant at or under this many bits per second (nil: the best of all).
    package var maxBitrate: Int?
    /// A local file is read no faster than it plays (a player, a relay to listeners); else as
    /// fast as the sinks take it.
    package var pacesLocalFiles = false

    package init(userAgent: String = AirtapVersion.userAgent, headers: [String] = [], proxy: String? = nil,
                insecure: Bool = false, connectTimeout: Double = 10, stallTimeout: Double = 15,
                reconnect: ReconnectPolicy? = nil, maxBitrate: Int? = nil) {
        self.userAgent = userAgent
        self.headers = headers
        self.proxy = proxy
        self.insecure = insecure
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.reconnect = reconnect
        self.maxBitrate = maxBitrate
    }
}
