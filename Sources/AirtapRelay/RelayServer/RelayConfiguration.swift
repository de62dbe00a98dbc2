import AirtapKit
import AirtapStations
import AirtapSupport

/// Everything that shapes the relay server. Defaults are the documented ones.
struct RelayConfiguration: Sendable {
    /// Loopback unless the user asks for more with `--listen`.
    package var host: String
    /// 0 asks the system for a free port; `RelayServer.port` tells which.
    package var port: Int
    /// Stream clients beyond this many get 503.
    package var maxListeners: Int
    /// Seconds of recent audio a new listener gets at once, so its player starts at once.
    package var burstSeconds: Double
    /// Audio bytes between metadata blocks, for clients that send `Icy-MetaData: 1`.
    package var metaint: Int
    /// How far behind the live edge a listener may fall before it skips ahead: the ring holds
    /// the burst plus this much.
    package var slackSeconds: Double
    /// A listener whose socket takes nothing for this long is disconnected.
    package var stallTimeout: Double
    /// A connection that sends no complete request within this long is closed.
    package var requestTimeout: Double
    /// A player sends one short request; a client that sends more than this is answered 400.
    package var maxRequestBytes: Int
    /// The stations served, each at its own mount `/<id>`, in this order (`/stream` is the
    /// first). Each names its stream before (or when) upstream does not: `icy-name`.
    package var stations: [Station]

    /// The first (usually the only) station.
    package var station: Station {
        get { stations[0] }
        set { stations[0] = newValue }
    }
    /// Listeners are written at most this often (see `IngestMailbox`): fewer, larger writes.
    package var flushInterval: Double
    /// Connections held at once, and how many of them may sit without a request: each is a file
    /// descriptor, and the recordings and upstream sockets of the same process must still get
    /// theirs (see `ConnectionBudget`).
    package var connectionBudget: ConnectionBudget
    /// The library shown at `/recordings`; nil: no such page (404).
    package var library: ServedLibrary?

    package init(station: Station, host: String = "127.0.0.1", port: Int = 8000, maxListeners: Int = 64,
                burstSeconds: Double = 2, metaint: Int = 16000, slackSeconds: Double = 8, stallTimeout: Double = 10,
                requestTimeout: Double = 10, maxRequestBytes: Int = 16 * 1024, flushInterval: Double = 0.5) {
        self.init(stations: [station], host: host, port: port, maxListeners: maxListeners, burstSeconds: burstSeconds,
                  metaint: metaint, slackSeconds: slackSeconds, stallTimeout: stallTimeout, requestTimeout: requestTimeout,
                  maxRequestBytes: maxRequestBytes, flushInterval: flushInterval)
    }

    /// `stations` must not be empty; `maxListeners` is per station.
    package init(stations: [Station], host: String = "127.0.0.1", port: Int = 8000, maxListeners: Int = 64,
                burstSeconds: Double = 2, metaint: Int = 16000, slackSeconds: Double = 8, stallTimeout: Double = 10,
                requestTimeout: Double = 10, maxRequestBytes: Int = 16 * 1024, flushInterval: Double = 0.5) {
        precondition(!stations.isEmpty, "a relay serves at least one station")
        self.flushInterval = flushInterval
        self.stations = stations
        self.host = host
        self.port = port
        self.maxListeners = maxListeners
        self.burstSeconds = burstSeconds
        self.metaint = metaint
        self.slackSeconds = slackSeconds
        self.stallTimeout = stallTimeout
        self.requestTimeout = requestTimeout
        self.maxRequestBytes = maxRequestBytes
        self.connectionBudget = ConnectionBudget(descriptorLimit: DescriptorLimit.current,
                                                 reserve: ConnectionBudget.descriptorReserve(stations: stations.count))
    }

    var ringSeconds: Double { burstSeconds + slackSeconds }

    /// A byte cap on top of the duration cap: 80 kB/s (640 kbit/s) covers every real stream, and
    /// keeps memory bounded even if an upstream's frame headers lie about their duration.
    var ringBytes: Int { Int(ringSeconds * 80_000) + 256 * 1024 }
}

/// What `GET /status` answers for each station, as JSON.
struct RelayStatus: Sendable, Hashable, Codable {
    package var station: String
    package var stationName: String
    package var upstream: String
    package var upstreamDetail: String
    package var codec: String?
    /// A mount served as MP3 (`--transcode`): the codec the station itself sends.
    package var transcodedFrom: String?
    package var bitrate: Int?
    package var title: String?
    package var listeners: Int
    package var peakListeners: Int
    package var listenersServed: Int
    package var maxListeners: Int
    package var bytesRelayed: Int
    package var packetsReceived: Int
    package var audioBytesReceived: Int
    package var skips: Int
    package var stalledDisconnects: Int
    /// Upstream reconnects, and packets the relay dropped because it fell behind its upstream.
    package var reconnects: Int
    package var droppedPackets: Int
    /// Connections accepted, and those that ended before asking for anything (with the last reason).
    package var connectionsAccepted: Int
    package var closedBeforeRequest: Int
    package var lastCloseBeforeRequest: String?
    package var uptimeSeconds: Double
}
