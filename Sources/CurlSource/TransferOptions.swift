import ICYWire

/// How one HTTP/ICY request is made. Plain values: the loop turns them into curl options.
public struct TransferOptions: Sendable, Hashable {
    /// Without user and password: those go in `credentials`, so that no URL curl reports back
    /// (the effective URL after redirects) carries them.
    public var url: String
    /// Sent as HTTP Basic authentication to the URL's host (curl does not send them on to
    /// another host a redirect points at).
    public var credentials: URLCredentials?
    public var userAgent: String
    /// Extra request headers, `Name: value` each.
    public var headers: [String]
    /// Sends `Icy-MetaData: 1`, asking the server to interleave metadata blocks.
    public var requestsICYMetadata: Bool
    /// An explicit proxy URL. When nil, libcurl honours `http_proxy`, `https_proxy` and `no_proxy`.
    public var proxy: String?
    /// Skips TLS peer and host verification (`--insecure`).
    public var insecure: Bool
    public var connectTimeout: Double
    /// Seconds without a single byte before the transfer fails as stalled.
    public var stallTimeout: Double
    public var maxRedirects: Int

    public init(
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
public protocol TransferDelegate: AnyObject, Sendable {
    /// The final response head (after redirects), before the first body byte.
    /// Return false to abort the transfer; it then completes with `.aborted`.
    func transfer(_ id: TransferID, didReceiveHead head: TransferHead) -> Bool
    /// Body bytes, valid only during the call. With `.pause` the bytes are NOT taken: curl keeps
    /// them and hands them over again after `CurlMultiLoop.resume(_:)`.
    func transfer(_ id: TransferID, didReceive bytes: UnsafeRawBufferPointer) -> ReceiveDecision
    func transfer(_ id: TransferID, didCompleteWith end: TransferEnd)
}

/// The raw head as libcurl reported it, plus the URL it finally came from.
public struct TransferHead: Sendable, Hashable {
    public var statusLine: String
    public var headerLines: [String]
    public var effectiveURL: String
}

/// What a delegate does with a chunk of body bytes.
public enum ReceiveDecision: Sendable, Hashable {
    case accepted
    /// Not now: a consumer is behind. The transfer waits (other transfers go on) until resumed.
    case pause
    case abort
}

public struct TransferID: Sendable, Hashable, CustomStringConvertible {
    let rawValue: Int
    public var description: String { "transfer \(rawValue)" }
}

public enum TransferEnd: Sendable, Equatable {
    /// The server closed the body normally.
    case finished
    /// The delegate returned false, or the transfer was cancelled.
    case aborted
    case failed(TransferError)
}

/// A libcurl failure in one line, with its category for exit codes and retry decisions.
public struct TransferError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case resolve, connect, timeout, tls, tooManyRedirects, protocolError, other
        /// The process has no file descriptor left (EMFILE/ENFILE): not the station's fault, and
        /// retrying would only fail again.
        case descriptorsExhausted
    }
    public let kind: Kind
    public let curlCode: Int
    public let message: String

    public var description: String { message }
}
