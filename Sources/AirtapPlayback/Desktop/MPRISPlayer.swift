import AirtapStations
import DesktopBus
import ICYWire

/// What MPRIS2 shows of the player at one moment. Pure: made from the player's status, compared
/// with the last one to find what changed.
struct MPRISSnapshot: Sendable, Hashable {
    package var playbackStatus: String
    package var title: TrackInfo?
    package var trackNumber: Int
    package var volume: Double
    package var stationName: String
    package var stationURL: String
    package var canGoNext: Bool
    package var canGoPrevious: Bool
    /// Stations tuned before this one: track numbers count from 0 again at each, and a track id
    /// must name one track of the whole session.
    package var tuning: Int

    package init(status: PlayerStatus, dial: StationDial, tuning: Int) {
        self.init(status: status, station: dial.current, canGoNext: dial.canGoNext, canGoPrevious: dial.canGoPrevious,
                  tuning: tuning)
    }

    package init(status: PlayerStatus, station: Station, canGoNext: Bool = false, canGoPrevious: Bool = false,
                 tuning: Int = 0) {
        switch status.state {
        case .paused: playbackStatus = "Paused"
        case .stopped, .standingBy: playbackStatus = "Stopped"
        case .connecting, .buffering, .playing, .draining, .reconnecting: playbackStatus = "Playing"
        }
        title = status.title
        trackNumber = status.trackNumber
        volume = status.amplitude
        stationName = station.name
        stationURL = station.urls.first ?? ""
        self.canGoNext = canGoNext
        self.canGoPrevious = canGoPrevious
        self.tuning = tuning
    }

    /// `mpris:trackid`, `xesam:title`, `xesam:artist` (when the title reads "Artist - Title"),
    /// `xesam:album` (the station), `xesam:url` (the station's URL).
    package var metadata: [BusEntry] {
        // MPRIS keeps /org/mpris for itself: track ids live under the player's own name.
        var entries = [BusEntry("mpris:trackid", .objectPath("/org/airtap/track/\(tuning)/\(trackNumber)"))]
        if let title {
            entries.append(BusEntry("xesam:title", .string(BusText.inert(title.title))))
            if let artist = title.artist { entries.append(BusEntry("xesam:artist", .strings([BusText.inert(artist)]))) }
        }
        entries.append(BusEntry("xesam:album", .string(BusText.inert(stationName))))
        if !stationURL.isEmpty { entries.append(BusEntry("xesam:url", .string(BusText.inert(stationURL)))) }
        return entries
    }
}

/// What a method call or a property write asks of the player.
package enum MPRISAction: Sendable, Hashable {
    case play, pause, playPause, stop, next, previous, quit
    /// A linear amplitude factor.
    case setVolume(Double)
}

extension MPRISAction {
    /// What the action does to the player. Quit ends `play`; Stop disconnects the station until
    /// Play (MPRIS: Stop stops playback, Play starts it again), and Next and Previous change the
    /// station: those three are the job's to do, as are Play and PlayPause after a Stop.
    package func perform(on player: Player, quit: () -> Void) {
        switch self {
        case .play: player.setPaused(false)
        case .pause: player.setPaused(true)
        case .playPause: player.togglePause()
        case .setVolume(let amplitude): player.setAmplitude(amplitude)
        case .quit: quit()
        case .stop, .next, .previous: break
        }
    }
}

/// MPRIS2's two interfaces (`org.mpris.MediaPlayer2` and `.Player`) over a snapshot: the
/// properties, which of them changed, and what each call asks for. No I/O.
enum MPRISPlayer {
    package static let objectPath = "/org/mpris/MediaPlayer2"
    package static let busName = "org.mpris.MediaPlayer2.airtap"
    package static let rootInterface = "org.mpris.MediaPlayer2"
    package static let playerInterface = "org.mpris.MediaPlayer2.Player"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let introspectableInterface = "org.freedesktop.DBus.Introspectable"

    /// The bus names to try, in order: the shared one, then one for this process.
    package static func busNames(processID: Int32) -> [String] {
        [busName, "\(busName).instance\(processID)"]
    }

    package static let rootProperties: [BusEntry] = [
        BusEntry("Identity", .string("airtap")),
        BusEntry("DesktopEntry", .string("airtap")),
        BusEntry("CanQuit", .boolean(true)),
        BusEntry("CanRaise", .boolean(false)),
        BusEntry("CanSetFullscreen", .boolean(false)),
        BusEntry("Fullscreen", .boolean(false)),
        BusEntry("HasTrackList", .boolean(false)),
        BusEntry("SupportedUriSchemes", .strings(["http", "https"])),
        BusEntry("SupportedMimeTypes", .strings(["audio/mpeg", "audio/aac", "audio/ogg"])),
    ]

    package static func playerProperties(_ snapshot: MPRISSnapshot) -> [BusEntry] {
        [
            BusEntry("PlaybackStatus", .string(snapshot.playbackStatus)),
            BusEntry("Metadata", .dictionary(snapshot.metadata)),
            BusEntry("Volume", .double(snapshot.volume)),
            BusEntry("Position", .int64(0)),
            BusEntry("Rate", .double(1)),
            BusEntry("MinimumRate", .double(1)),
            BusEntry("MaximumRate", .double(1)),
            BusEntry("CanGoNext", .boolean(snapshot.canGoNext)),
            BusEntry("CanGoPrevious", .boolean(snapshot.canGoPrevious)),
            BusEntry("CanPlay", .boolean(true)),
            BusEntry("CanPause", .boolean(true)),
            BusEntry("CanSeek", .boolean(false)),
            BusEntry("CanControl", .boolean(true)),
        ]
    }

    /// The Player properties whose values differ between two snapshots (for PropertiesChanged).
    package static func changedProperties(from old: MPRISSnapshot, to new: MPRISSnapshot) -> [BusEntry] {
        let before = playerProperties(old)
        return playerProperties(new).filter { entry in !before.contains(entry) }
    }

    /// What a call asks for: a reply now, and an action for the player.
    package struct Answer: Sendable {
        package var reply: BusReply
        package var action: MPRISAction?
    }

    /// Answers one call to the object. `snapshot` is what the player shows now.
    package static func answer(_ call: borrowing BusCall, snapshot: MPRISSnapshot) -> Answer {
        switch (call.interface, call.member) {
        case (rootInterface, "Quit"): return Answer(reply: .values([]), action: .quit)
        case (rootInterface, "Raise"): return Answer(reply: .values([]), action: nil)
        case (playerInterface, let member):
            let actions: [String: MPRISAction] = [
                "Play": .play, "Pause": .pause, "PlayPause": .playPause, "Stop": .stop,
                "Next": .next, "Previous": .previous,
            ]
            if let action = actions[member] {
                let allowed = (action != .next || snapshot.canGoNext) && (action != .previous || snapshot.canGoPrevious)
                return Answer(reply: .values([]), action: allowed ? action : nil)
            }
            if ["Seek", "SetPosition", "OpenUri"].contains(member) {
                return Answer(reply: .error(name: "org.freedesktop.DBus.Error.NotSupported", message: "a live stream cannot seek"), action: nil)
            }
            return Answer(reply: .unhandled, action: nil)
        case (propertiesInterface, "Get"):
            guard let interface = call.readString(), let name = call.readString() else { return invalidArguments }
            guard let value = properties(of: interface, snapshot: snapshot)?.first(where: { $0.key == name })?.value else {
                return Answer(reply: .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name)"), action: nil)
            }
            return Answer(reply: .values([.variant(value)]), action: nil)
        case (propertiesInterface, "GetAll"):
            guard let interface = call.readString() else { return invalidArguments }
            return Answer(reply: .values([.dictionary(properties(of: interface, snapshot: snapshot) ?? [])]), action: nil)
        case (propertiesInterface, "Set"):
            guard let interface = call.readString(), let name = call.readString() else { return invalidArguments }
            guard interface == playerInterface, name == "Volume" else {
                return Answer(reply: .error(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "\(name) is read-only"), action: nil)
            }
            guard let volume = call.readVariantDouble(), volume.isFinite else { return invalidArguments }
            return Answer(reply: .values([]), action: .setVolume(min(1, max(0, volume))))
        case (introspectableInterface, "Introspect"):
            return Answer(reply: .values([.string(introspection)]), action: nil)
        default:
            return Answer(reply: .unhandled, action: nil)
        }
    }

    private static let invalidArguments = Answer(
        reply: .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "unexpected arguments"), action: nil)

    private static func properties(of interface: String, snapshot: MPRISSnapshot) -> [BusEntry]? {
        switch interface {
        case rootInterface: rootProperties
        case playerInterface: playerProperties(snapshot)
        default: nil
        }
    }

    /// For clients that introspect before they call (busctl, d-feet).
    static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
         <interface name="org.freedesktop.DBus.Introspectable">
          <method name="Introspect"><arg name="xml" type="s" direction="out"/></method>
         </interface>
         <interface name="org.freedesktop.DBus.Properties">
          <method name="Get"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="out"/></method>
          <method name="GetAll"><arg type="s" direction="in"/><arg type="a{sv}" direction="out"/></method>
          <method name="Set"><arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="v" direction="in"/></method>
          <signal name="PropertiesChanged"><arg type="s"/><arg type="a{sv}"/><arg type="as"/></signal>
         </interface>
         <interface name="org.mpris.MediaPlayer2">
          <method name="Raise"/><method name="Quit"/>
          <property name="CanQuit" type="b" access="read"/><property name="CanRaise" type="b" access="read"/>
          <property name="CanSetFullscreen" type="b" access="read"/><property name="Fullscreen" type="b" access="read"/>
          <property name="HasTrackList" type="b" access="read"/><property name="Identity" type="s" access="read"/>
          <property name="DesktopEntry" type="s" access="read"/>
          <property name="SupportedUriSchemes" type="as" access="read"/><property name="SupportedMimeTypes" type="as" access="read"/>
         </interface>
         <interface name="org.mpris.MediaPlayer2.Player">
          <method name="Next"/><method name="Previous"/><method name="Pause"/><method name="PlayPause"/>
          <method name="Stop"/><method name="Play"/>
          <method name="Seek"><arg type="x" direction="in"/></method>
          <method name="SetPosition"><arg type="o" direction="in"/><arg type="x" direction="in"/></method>
          <method name="OpenUri"><arg type="s" direction="in"/></method>
          <signal name="Seeked"><arg type="x"/></signal>
          <property name="PlaybackStatus" type="s" access="read"/><property name="Rate" type="d" access="read"/>
          <property name="Metadata" type="a{sv}" access="read"/><property name="Volume" type="d" access="readwrite"/>
          <property name="Position" type="x" access="read"/><property name="MinimumRate" type="d" access="read"/>
          <property name="MaximumRate" type="d" access="read"/><property name="CanGoNext" type="b" access="read"/>
          <property name="CanGoPrevious" type="b" access="read"/><property name="CanPlay" type="b" access="read"/>
          <property name="CanPause" type="b" access="read"/><property name="CanSeek" type="b" access="read"/>
          <property name="CanControl" type="b" access="read"/>
         </interface>
        </node>
        """
}
