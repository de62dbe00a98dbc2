import ICYWire

/// How one HTTP/ICY request is made. Plain values: the loop turns them into curl options.
package struct TransferOptions: Sendable, Hashable {
    /// Without user and password: those go in `credentials`, so that no URL curl reports back
    /// (the effective URL after redirects) carries them.
    package var url: String
    /// Sent as HTTP Basic authentication to the URL's host (curl does not send them on to
    /// another host a redirect points at).
    package var credentials: URLCredentials?
    package var userAgent: String
    /// Extra request headers, `Name: value` each.
    package var headers: [String]
    /// Sends `Icy-MetaData: 1`, asking the server to interleave metadata blocks.
    package var requestsICYMetadata: Bool
    /// An explicit proxy URL. When nil, libcurl honours `http_proxy`, `https_proxy` and `no_proxy`.
    package var proxy: String?
    /// Skips TLS peer and host verification (`--insecure`).
    package var insecure: Bool
    package var connectTimeout: Double
    /// Seconds without a single byte before the transfer fails as stalled.
    package var stallTimeout: Double
    package var maxRedirects: Int

    package init(
        url: String,
        credentials: URLCredentials? = nil,
        userAgent: String,
        headers: [String] = [],
        requestsICYMetadata: Bool = true,
        proxy: String? = nil,
        insecure: Bool = false,
        connectTimeout: Double = 10,
        stallTimeout: Double = 15,
        maxRedirects: Int = 5
    ) {
        self.url = url
        self.credentials = credentials
        self.userAgent = userAgent
        self.headers = headers
        self.requestsICYMetadata = requestsICYMetadata
        self.proxy = proxy
        self.insecure = insecure
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.maxRedirects = maxRedirects
    }
}

/// What a transfer hands its delegate. All calls arrive on the loop's thread, in order.
package protocol TransferDelegate: AnyObject, Sendable {
    /// The final response head (after redirects), before the first body byte.
    /// Return false to abort the transfer; it then completes with `.aborted`.
    func transfer(_ id: TransferID, didReceiveHead head: TransferHead) -> Bool
    /// Body bytes, valid only during the call. With `.pause` the bytes are NOT taken: curl keeps
    /// them and hands them over again after `CurlMultiLoop.resume(_:)`.
    func transfer(_ id: TransferID, didReceive bytes: UnsafeRawBufferPointer) -> ReceiveDecision
    func transfer(_ id: TransferID, didCompleteWith end: TransferEnd)
}

/// The raw head as libcurl reported it, plus the URL it finally came from.
package struct TransferHead: Sendable, Hashable {
    package var statusLine: String
    package var headerLines: [String]
    package var effectiveURL: String
}

/// What a delegate does with a chunk of body bytes.
package enum ReceiveDecision: Sendable, Hashable {
    case accepted
    /// Not now: a consumer is behind. The transfer waits (other transfers go on) until resumed.
    case pause
    case abort
}

package struct TransferID: Sendable, Hashable, CustomStringConvertible {
    let rawValue: Int
    package var description: String { "transfer \(rawValue)" }
}

package enum TransferEnd: Sendable, Equatable {
    /// The server closed the body normally.
    case finished
    /// The delegate returned false, or the transfer was cancelled.
    case aborted
    case failed(TransferError)
}

/// A libcurl failure in one line, with its category for exit codes and retry decisions.
package struct TransferError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Kind: Sendable, Hashable {
        case resolve, connect, timeout, tls, tooManyRedirects, protocolError, other
        /// The process has no file descriptor left (EMFILE/ENFILE): not the station's fault, and
        /// retrying would only fail again.
        case descriptorsExhausted
    }
    package let kind: Kind
    package let curlCode: Int
    package let message: String

    package var description: String { message }
}
