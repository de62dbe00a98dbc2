import DequeModule
import ICYWire

/// The URLs one round of connecting tries, in order: the station's own, and each playlist's
/// entries in front of the rest as the playlist is read (its mirrors before the station's
/// fallbacks). A value with no I/O, tested on its own (`CandidateListTests`).
///
/// Bounded, because a playlist is a stranger's file that chooses the hosts airtap connects to:
/// without bounds, playlists of playlists of thousands of entries fan thousands of requests out.
/// Real playlists list a few mirrors of one stream.
struct CandidateList {
    static let maxPlaylistDepth = 3
    static let maxEntriesPerPlaylist = 16
    /// URLs from playlists tried in one round (a reconnect starts a new round).
    static let maxPlaylistEntriesPerRound = 64

    struct Candidate: Sendable, Hashable {
        /// Without user and password, so that every log line, error and state shows it as is.
        let url: String
        let credentials: URLCredentials?
        /// How many playlists deep this URL came from.
        let playlistDepth: Int

        init(_ url: String, playlistDepth: Int) {
            (self.url, self.credentials) = URLCredentials.split(url)
            self.playlistDepth = playlistDepth
        }

        /// Whether a playlist found at this URL may be followed: nesting stops at `maxPlaylistDepth`.
        var mayExpand: Bool { playlistDepth < CandidateList.maxPlaylistDepth }
    }

    enum Next: Sendable, Hashable {
        case connect(Candidate)
        /// Every URL was tried.
        case exhausted
        /// The round's playlists listed more URLs than are tried; the rest are dropped.
        case playlistEntriesExhausted
    }

    private var waiting: Deque<Candidate>
    private var playlistEntriesTried = 0

    /// A new round: the station's URLs from the first.
    init(urls: [String]) {
        waiting = Deque(urls.map { Candidate($0, playlistDepth: 0) })
    }

    mutating func next() -> Next {
        guard let first = waiting.first else { return .exhausted }
        if first.playlistDepth > 0 {
            guard playlistEntriesTried < Self.maxPlaylistEntriesPerRound else {
                waiting.removeAll()
                return .playlistEntriesExhausted
            }
            playlistEntriesTried += 1
        }
        return .connect(waiting.removeFirst())
    }

    /// Puts the entries of the playlist read at `playlist` (which `mayExpand`) next, at most
    /// `maxEntriesPerPlaylist` of them. Returns how many were taken.
    @discardableResult
    mutating func insert(entries: [String], from playlist: Candidate) -> Int {
        guard playlist.mayExpand else { return 0 }
        let taken = entries.prefix(Self.maxEntriesPerPlaylist).map { Candidate($0, playlistDepth: playlist.playlistDepth + 1) }
        waiting.insert(contentsOf: taken, at: 0)
        return taken.count
    }
}
