import AirtapSupport
import CurlSource
import FoundationEssentials

/// Requests to the station directory: one GET at a time, on the curl loop, each answer bounded
/// in size and time, tried on the next server when one fails.
package struct DirectoryClient: Sendable {
    package let servers: DirectoryServers
    package let loop: CurlMultiLoop
    package var userAgent = AirtapVersion.userAgent
    /// How long one server may take for one request, connect included.
    package var timeLimit: Double = 15
    /// A search of 1000 stations is about 1 MiB of JSON.
    package var maxAnswerBytes = 2 << 20
    /// Servers tried for one request before giving up: each may take `timeLimit`.
    package var maxServersTried = 3

    package init(servers: DirectoryServers, loop: CurlMultiLoop) {
        self.servers = servers
        self.loop = loop
    }

    /// What went wrong with one server, and whether another might do better.
    private struct Failure: Error {
        let error: AirtapError
        let triesNext: Bool
    }

    /// A 2xx answer to `pathAndQuery` (`/json/...`) from the first server that gives one that
    /// `decode` takes. A 4xx is the answer (the next server would say the same); a failed
    /// connection, a 5xx, a timeout, an answer over the bound or one `decode` refuses moves on to
    /// the next server.
    package func get<Answer>(_ pathAndQuery: String,
                             decode: ([UInt8]) throws(DirectoryAnswerError) -> Answer) async throws(AirtapError) -> Answer {
        let candidates = await servers.candidatesOffPool()
        var last: AirtapError?
        for server in candidates.prefix(maxServersTried) {
            switch await fetch(server, pathAndQuery) {
            case .success(let body):
                do {
                    return try decode(body)
                } catch {
                    last = .network(url: server, reason: "\(error)")
                }
            case .failure(let failure):
                if !failure.triesNext { throw failure.error }
                last = failure.error
            }
        }
        throw last ?? .network(url: "station directory", reason: "no server to ask")
    }

    private func fetch(_ server: String, _ pathAndQuery: String) async -> Result<[UInt8], Failure> {
        let options = requestOptions(server + pathAndQuery)
        let outcome = await CurlFetch.get(options, maxBodyBytes: maxAnswerBytes, timeLimit: timeLimit, on: loop)
        return Self.judge(outcome, server: server, maxAnswerBytes: maxAnswerBytes)
    }

    /// A JSON GET to the directory: no ICY metadata, http(s) only, its own User-Agent. The fetch's
    /// own time limit bounds the whole request; curl's stall check sits a second beyond it, so a
    /// silent server is always told as not answering in time, not as curl's "too slow" racing it.
    func requestOptions(_ url: String) -> TransferOptions {
        TransferOptions(url: url, userAgent: userAgent, headers: ["Accept: application/json"], requestsICYMetadata: false,
                        connectTimeout: min(10, timeLimit), stallTimeout: timeLimit + 1, maxRedirects: 3)
    }

    private static func judge(_ outcome: CurlFetch.Outcome, server: String, maxAnswerBytes: Int) -> Result<[UInt8], Failure> {
        switch outcome {
        case .answered(let head, let body):
            let parts = head.statusLine.split(separator: " ", maxSplits: 2)
            let status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            if (200..<300).contains(status) { return .success(body) }
            let reason = parts.count > 2 ? String(parts[2].prefix(80)) : ""
            let error = AirtapError.network(url: server, reason: "the directory answered \(status) \(reason)".trimmingSpaces())
            return .failure(Failure(error: error, triesNext: !(400..<500).contains(status)))
        case .tooLarge(let limit):
            return .failure(Failure(error: .network(url: server, reason: "the directory's answer is larger than \(BoundedFileRead.describe(limit))"),
                                    triesNext: true))
        case .timedOut(let seconds):
            return .failure(Failure(error: .network(url: server, reason: "the directory did not answer within \(Int(seconds.rounded())) s"),
                                    triesNext: true))
        case .failed(let error):
            return .failure(Failure(error: .network(url: server, reason: error.message), triesNext: true))
        }
    }

    /// The stations of a `/json/stations/...` request.
    package func stations(_ pathAndQuery: String) async throws(AirtapError) -> [DirectoryStation] {
        try await get(pathAndQuery) { bytes throws(DirectoryAnswerError) in try DirectoryStation.list(from: bytes) }
    }
}
