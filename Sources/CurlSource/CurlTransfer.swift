import CCurl
import Descriptors
import Glibc
import ICYWire

/// What the transfers did in the loop's turns, for its rule on resting between batches. Owned by
/// the loop, used only on its thread.
final class TurnActivity {
    /// A transfer was handed body bytes this turn, from a socket event or from curl's own timeout
    /// action (which reads a socket that has data): the loop rests only after such a turn.
    var receivedBody = false
    /// Transfers whose source sends faster than any radio stream plays (a fast rip, a long burst
    /// on connect). A rest would only hold them back (the kernel's buffer fills and the sender
    /// waits: a fast rip of an hour took seconds instead of a fraction of one), so the loop does
    /// not rest while there is one.
    var fastTransfers = 0
    /// Transfers before their response head: resolving, connecting, the TLS handshake, the
    /// request. The loop does not rest while there is one, or each step of a station's start
    /// would wait out a rest that other stations' audio began.
    var transfersSettingUp = 0
    /// Counts the loop's turns (a rest, curl's timeout action and a look at the sockets), so a
    /// transfer can tell the bytes of one turn.
    var turn = 0
}

/// One easy handle and what it needs while it lives. Owned by the loop, used only on its thread.
final class CurlTransfer {
    let id: TransferID
    let easy: UnsafeMutableRawPointer
    private let delegate: any TransferDelegate
    private let activity: TurnActivity
    /// Counted in `activity.fastTransfers` while true.
    private var isFast = false
    /// Counted in `activity.transfersSettingUp` while true.
    private var isSettingUp = true
    /// Body bytes in the loop's turn `bytesInTurn.turn`.
    private var bytesInTurn = (turn: -1, bytes: 0)
    /// More than this in one turn is a kernel buffer that filled during a rest: a source faster
    /// than real time held back by rests (a real-time stream brings 16-40 KB a second, up to
    /// 80 KB in `play`'s longest rest of 2 s; Icecast's burst on connect is 64 KB, once). A
    /// stream over 500 kbps may pass for fast after such a rest: the loop then rests less,
    /// which costs wake-ups, never audio.
    private static let fastBytesInTurn = 128 * 1024
    /// Body bytes since `start`, to tell a fast source from a real-time one.
    private var rateWindow: (start: ContinuousClock.Instant?, bytes: Int) = (nil, 0)
    /// Faster than this is not a stream played in real time: 2 Mbit/s, where FLAC at CD quality
    /// is 1.4 and MP3 at most 0.32.
    private static let fastBytesPerSecond = 256 * 1024
    private static let readBufferBytes = 16 * 1024
    private var requestHeaders: UnsafeMutablePointer<curl_slist>?
    private var statusAliases: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    private var statusLine = ""
    private var headerLines: [String] = []
    /// The bytes of the current response's head so far: a stranger's head is bounded before its
    /// lines are kept (an Icecast head is about a kilobyte).
    private var headBytes = 0
    private static let maxHeadBytes = 64 * 1024
    private var state = State.awaitingHead
    private var completed = false
    /// The user's headers and credentials, and where they may go: the request's own scheme, host
    /// and port. With user headers the transfer follows redirects itself, as curl would (at most
    /// `maxRedirects`), because curl sends every header but Authorization and Cookie to whatever
    /// host a redirect names, an API key included.
    private let userHeaders: [String]
    private let credentials: URLCredentials?
    private let requestsICYMetadata: Bool
    private let origin: String?
    private let maxRedirects: Int
    private var redirectsLeft: Int
    /// Where the last response redirected to, while the transfer follows redirects itself.
    private var redirect: String?
    var isRedirected: Bool { state == .redirected }
    /// Whether the transfer's latest socket was refused for want of a descriptor: by the
    /// transfer's end another transfer may have closed one, and the kernel probe alone would then
    /// call it a refused connect. A later socket that opened (another address) clears it.
    private var lastSocketRefusedForDescriptors = false

    private enum State {
        case awaitingHead
        case receivingBody
        /// The delegate said stop: curl reports a write error, which is ours, not the server's.
        case abortedByDelegate
        /// The head passed `maxHeadBytes`: curl reports a write error, which is the server's.
        case headTooLarge
        /// A redirect this transfer follows itself: curl reports a write error, which is no error.
        case redirected
    }

    init(id: TransferID, options: TransferOptions, delegate: any TransferDelegate, activity: TurnActivity) {
        self.id = id
        self.delegate = delegate
        self.activity = activity
        activity.transfersSettingUp += 1
        // curl_easy_init fails only without memory.
        guard let easy = curl_easy_init() else { preconditionFailure("curl_easy_init failed") }
        self.easy = easy
        userHeaders = options.headers
        credentials = options.credentials
        requestsICYMetadata = options.requestsICYMetadata
        origin = URLOrigin.of(options.url)
        maxRedirects = options.maxRedirects
        redirectsLeft = options.maxRedirects
        errorBuffer.initialize(to: 0)
        configure(options)
    }

    /// On the loop thread: the loop's dictionary is the only owner.
    deinit {
        if isFast { activity.fastTransfers -= 1 }
        if isSettingUp { activity.transfersSettingUp -= 1 }
        curl_easy_cleanup(easy)
        curl_slist_free_all(requestHeaders)
        curl_slist_free_all(statusAliases)
        errorBuffer.deallocate()
    }

    private func configure(_ options: TransferOptions) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        ccurl_setopt_string(easy, CURLOPT_URL, options.url)
        ccurl_setopt_string(easy, CURLOPT_USERAGENT, options.userAgent)
        if let credentials = options.credentials {
            ccurl_setopt_string(easy, CURLOPT_USERNAME, credentials.user)
            if let password = credentials.password { ccurl_setopt_string(easy, CURLOPT_PASSWORD, password) }
        }
        ccurl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        ccurl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, userHeaders.isEmpty ? 1 : 0)
        ccurl_setopt_long(easy, CURLOPT_MAXREDIRS, options.maxRedirects)
        // Radio URLs come from strangers' playlists: never let a redirect reach file:// or the like.
        ccurl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        ccurl_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(options.connectTimeout * 1000))
        // A stream never ends on its own, so there is no total timeout; a silent server is a stall,
        // and so is one that trickles: below 256 bytes/s nothing is audio (8 kbps is 1000 bytes/s).
        ccurl_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, 256)
        ccurl_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, max(1, Int(options.stallTimeout.rounded(.up))))
        // curl's default receive buffer, allocated per transfer: 64 KB cost 64 MB at 1000
        // stations, and a real-time stream brings a few KB per read (16 KB per one-second batch
        // at 128 kbps); a fast source takes more reads of 16 KB, not more copies.
        ccurl_setopt_long(easy, CURLOPT_BUFFERSIZE, Self.readBufferBytes)
        ccurl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        ccurl_setopt_pointer(easy, CURLOPT_PRIVATE, UnsafeMutableRawPointer(bitPattern: id.rawValue))
        if let proxy = options.proxy { ccurl_setopt_string(easy, CURLOPT_PROXY, proxy) }
        if options.insecure {
            ccurl_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 0)
            ccurl_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 0)
        }

        setRequestHeaders(options.headers)
        // SHOUTcast v1 answers "ICY 200 OK"; this alias makes curl parse it as an HTTP status line.
        statusAliases = curl_slist_append(nil, "ICY 200 OK")
        ccurl_setopt_slist(easy, CURLOPT_HTTP200ALIASES, statusAliases)

        ccurl_setopt_write_callback(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        ccurl_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        ccurl_setopt_write_callback(easy, CURLOPT_WRITEFUNCTION, curlBodyCallback)
        ccurl_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        // The socket comes through the descriptor headroom, like every descriptor airtap opens.
        ccurl_setopt_opensocket_callback(easy, curlOpenSocketCallback)
        ccurl_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, context)
    }

    private func setRequestHeaders(_ user: [String]) {
        curl_slist_free_all(requestHeaders)
        requestHeaders = nil
        var headers = user
        if requestsICYMetadata { headers.append("Icy-MetaData: 1") }
        for header in headers { requestHeaders = curl_slist_append(requestHeaders, header) }
        ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, requestHeaders)
    }

    /// After a redirect this transfer follows itself: the next request, to the redirect's
    /// target, with the user's headers and credentials only where the first request went, its
    /// handle back in `multi`. False (the handle out of `multi`) when there is none to follow.
    func followRedirect(in multi: UnsafeMutableRawPointer) -> Bool {
        curl_multi_remove_handle(multi, easy)
        guard let target = redirect, redirectsLeft > 0 else { return false }
        redirect = nil
        redirectsLeft -= 1
        let home = origin != nil && URLOrigin.of(target) == origin
        ccurl_setopt_string(easy, CURLOPT_URL, target)
        ccurl_setopt_pointer(easy, CURLOPT_USERNAME, nil)
        ccurl_setopt_pointer(easy, CURLOPT_PASSWORD, nil)
        if home, let credentials {
            ccurl_setopt_string(easy, CURLOPT_USERNAME, credentials.user)
            if let password = credentials.password { ccurl_setopt_string(easy, CURLOPT_PASSWORD, password) }
        }
        setRequestHeaders(home ? userHeaders : [])
        state = .awaitingHead
        statusLine = ""
        headerLines.removeAll()
        headBytes = 0
        curl_multi_add_handle(multi, easy)
        return true
    }

    /// The response's Location, resolved against the URL it answered, as curl would follow it.
    private func redirectTarget() -> String? {
        guard let field = headerLines.last(where: { $0.lowercased().hasPrefix("location:") }) else { return nil }
        var location = Substring(field.dropFirst("location:".count).drop { $0 == " " || $0 == "\t" })
        while let last = location.last, last == " " || last == "\t" { location.removeLast() }
        var base: UnsafeMutablePointer<CChar>?
        ccurl_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &base)
        guard !location.isEmpty, let base, let handle = curl_url() else { return nil }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, base, 0) == CURLUE_OK,
              curl_url_set(handle, CURLUPART_URL, String(location), 0) == CURLUE_OK else { return nil }
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, CURLUPART_URL, &value, 0) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }

    // MARK: Callbacks (loop thread)

    /// False aborts the transfer (the delegate refused the head).
    fileprivate func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let startsResponse = bytes.starts(with: "HTTP/".utf8) || bytes.starts(with: "ICY ".utf8)
        headBytes = (startsResponse ? 0 : headBytes) + bytes.count
        guard headBytes <= Self.maxHeadBytes else {
            state = .headTooLarge
            return false
        }
        var line = TextDecoding.decode(bytes, fallback: .cp1252)
        // "\r\n" is one Character, so compare by isNewline, not with "\r" and "\n".
        while let last = line.last, last.isNewline { line.removeLast() }
        if startsResponse {
            // A new status line: a redirect or an interim answer came before; start over.
            statusLine = line
            headerLines.removeAll()
        } else if !line.isEmpty {
            headerLines.append(line)
        } else if state == .awaitingHead, !userHeaders.isEmpty, isRedirectStatus(statusLine) {
            // Followed by `followRedirect` once curl ends this response (its body is not read).
            if let target = redirectTarget() {
                redirect = target
                state = .redirected
                return false
            }
        } else if state == .awaitingHead, isSuccessStatus(statusLine) {
            // The blank line ends a 2xx head, which no redirect follows: hand it over now rather
            // than with the first body byte, so that a server that sends a head and then nothing
            // is known to have answered.
            return deliverHead()
        }
        return true
    }

    private func isSuccessStatus(_ line: String) -> Bool {
        line.split(separator: " ", maxSplits: 2).dropFirst().first?.first == "2"
    }

    /// The statuses curl follows with a Location.
    private func isRedirectStatus(_ line: String) -> Bool {
        let code = line.split(separator: " ", maxSplits: 2).dropFirst().first
        return ["301", "302", "303", "307", "308"].contains { $0 == code }
    }

    fileprivate func receiveBody(_ bytes: UnsafeRawBufferPointer) -> ReceiveDecision {
        switch state {
        case .awaitingHead:
            guard deliverHead() else { return .abort }
            fallthrough
        case .receivingBody:
            activity.receivedBody = true
            let decision = delegate.transfer(id, didReceive: bytes)
            // A paused chunk comes again after the resume: counted then.
            if decision == .accepted { measureRate(bytes.count) }
            if decision == .abort { state = .abortedByDelegate }
            return decision
        case .abortedByDelegate, .headTooLarge, .redirected:
            return .abort
        }
    }

    /// Windows of at least a second: fast once a window's rate passes `fastBytesPerSecond` (at
    /// once when its bytes do), real-time again after a window below it. A real-time station's
    /// window spans a rest or more, so one clock read per read is all this costs.
    private func measureRate(_ count: Int) {
        if bytesInTurn.turn != activity.turn { bytesInTurn = (activity.turn, 0) }
        bytesInTurn.bytes += count
        if bytesInTurn.bytes > Self.fastBytesInTurn, !isFast {
            // Fast from now on; the next window of a second says whether it stays so.
            isFast = true
            activity.fastTransfers += 1
            rateWindow = (ContinuousClock.now, 0)
            return
        }
        let now = ContinuousClock.now
        guard let start = rateWindow.start else {
            rateWindow = (now, count)
            return
        }
        rateWindow.bytes += count
        let elapsed = now - start
        let fast: Bool
        if elapsed >= .seconds(1) {
            fast = Double(rateWindow.bytes) >= Double(Self.fastBytesPerSecond) * (elapsed / .seconds(1))
        } else if rateWindow.bytes >= Self.fastBytesPerSecond {
            fast = true
        } else {
            return
        }
        rateWindow = (now, 0)
        if fast != isFast {
            isFast = fast
            activity.fastTransfers += fast ? 1 : -1
        }
    }

    private func deliverHead() -> Bool {
        state = .receivingBody
        if isSettingUp {
            isSettingUp = false
            activity.transfersSettingUp -= 1
        }
        if delegate.transfer(id, didReceiveHead: head()) { return true }
        state = .abortedByDelegate
        return false
    }

    private func head() -> TransferHead {
        var url: UnsafeMutablePointer<CChar>?
        ccurl_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &url)
        return TransferHead(
            statusLine: statusLine,
            headerLines: headerLines,
            effectiveURL: url.map { String(cString: $0) } ?? ""
        )
    }

    func end(for code: CURLcode) -> TransferEnd {
        if state == .abortedByDelegate { return .aborted }
        if state == .redirected {
            return .failed(TransferError(kind: .tooManyRedirects, curlCode: Int(CURLE_TOO_MANY_REDIRECTS.rawValue),
                                         message: "more than \(maxRedirects) redirects"))
        }
        if state == .headTooLarge {
            return .failed(TransferError(kind: .protocolError, curlCode: Int(code.rawValue),
                                         message: "the response head is larger than \(Self.maxHeadBytes / 1024) KiB"))
        }
        if code == CURLE_OK {
            // A head with no body (a 404 without text, an empty 200) still reaches the delegate.
            if state == .awaitingHead, !statusLine.isEmpty, !deliverHead() { return .aborted }
            return .finished
        }
        let detail = String(cString: errorBuffer)
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        if code == CURLE_COULDNT_CONNECT || code == CURLE_OUT_OF_MEMORY, lastSocketRefusedForDescriptors || Self.descriptorsExhausted() {
            return .failed(TransferError(kind: .descriptorsExhausted, curlCode: Int(code.rawValue),
                                         message: "cannot open a socket: too many open files (\(message))"))
        }
        // curl refuses one header line over its own limit (100 KB) as "Out of memory".
        if code == CURLE_OUT_OF_MEMORY, state == .awaitingHead {
            return .failed(TransferError(kind: .protocolError, curlCode: Int(code.rawValue),
                                         message: "a line of the response head is larger than curl accepts"))
        }
        return .failed(TransferError(kind: Self.kind(of: code), curlCode: Int(code.rawValue), message: message))
    }

    func complete(_ end: TransferEnd) {
        guard !completed else { return }
        completed = true
        delegate.transfer(id, didCompleteWith: end)
    }

    /// The socket callback's outcome, on the loop thread (curl calls it from `curl_multi_socket_action`).
    fileprivate func socketOpened(refusedForDescriptors: Bool) { lastSocketRefusedForDescriptors = refusedForDescriptors }

    /// Whether the process is out of descriptors now. curl reports a socket() that failed with
    /// EMFILE as "Couldn't connect" and does not always keep the errno, so ask the kernel:
    /// /dev/null that cannot be opened (or only into the headroom) means none is left.
    private static func descriptorsExhausted() -> Bool {
        let probe = DescriptorHeadroom.admit(Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC))
        if probe >= 0 {
            close(probe)
            return false
        }
        return errno == EMFILE || errno == ENFILE
    }

    private static func kind(of code: CURLcode) -> TransferError.Kind {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .resolve
        case CURLE_COULDNT_CONNECT: .connect
        case CURLE_OPERATION_TIMEDOUT: .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM,
             CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE:
            .tls
        case CURLE_TOO_MANY_REDIRECTS: .tooManyRedirects
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_WEIRD_SERVER_REPLY,
             CURLE_RECV_ERROR, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING:
            .protocolError
        default: .other
        }
    }
}

// Capture-free closures convert to C function pointers; the transfer rides in the user pointer.
private let curlHeaderCallback: curl_write_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    guard transfer.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: size * count)) else { return 0 }
    return size * count
}

/// socket(2) for curl, refused (EMFILE) when it would take the process's last descriptors.
private let curlOpenSocketCallback: curl_opensocket_callback = { context, _, address in
    guard let address else { return CURL_SOCKET_BAD }
    let descriptor = DescriptorHeadroom.admit(socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol))
    let refused = descriptor < 0 && (errno == EMFILE || errno == ENFILE)
    if let context {
        Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue().socketOpened(refusedForDescriptors: refused)
    }
    return descriptor >= 0 ? descriptor : CURL_SOCKET_BAD
}

private let curlBodyCallback: curl_write_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
    switch transfer.receiveBody(bytes) {
    case .accepted: return size * count
    // curl keeps this chunk and calls again with it once the transfer is unpaused.
    case .pause: return Int(CURL_WRITEFUNC_PAUSE)
    case .abort: return 0
    }
}
