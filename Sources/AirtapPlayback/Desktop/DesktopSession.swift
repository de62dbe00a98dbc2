import AirtapStations
import CurlSource
import DesktopBus
import Glibc
import ICYWire
import Logging

/// `airtap play` on the desktop's session bus: MPRIS2 media controls (`mpris`) and a
/// notification for each title heard (`notify`). The bus connection lives on the curl loop's
/// thread, its descriptor in the loop's epoll; losing it ends these, never the playing.
package final class DesktopSession: LoopDescriptorSource, @unchecked Sendable {
    // Why @unchecked Sendable is sound: once `start` has attached the session to the loop,
    // `bus`, `dial`, `tuning`, `snapshot`, `status`, `notifiedTrack` and `isClosed` are touched only on the loop thread: the loop
    // calls the LoopDescriptorSource methods there, and `playerChanged` and `tuned` hop there through
    // `loop.schedule`. The `let`s are immutable and Sendable.
    private let bus: SessionBus
    package let descriptor: Int32
    private let loop: CurlMultiLoop
    /// The station playing, and whether Next and Previous can move.
    private var dial: StationDial
    /// Stations tuned before this one.
    private var tuning = 0
    private let features: Features
    private let perform: @Sendable (MPRISAction) -> Void
    private let logger: Logger
    private var snapshot: MPRISSnapshot
    /// The player's last status, for a snapshot made when the station changes.
    private var status: PlayerStatus
    private var notifiedTrack: Int
    private var isClosed = false

    package struct Features: Sendable, Hashable {
        /// Media controls: the MPRIS2 object and bus name.
        package var mpris: Bool
        /// A desktop notification for each title heard.
        package var notify: Bool

        package init(mpris: Bool, notify: Bool) {
            self.mpris = mpris
            self.notify = notify
        }
    }

    /// Connects to the session bus at `address` (the `DBUS_SESSION_BUS_ADDRESS` value) and joins
    /// `loop`; nil, with a debug line only, when there is nothing to do or no bus to reach: a
    /// desktop feature never costs the playing. `perform` runs on the loop thread and must return quickly.
    package static func start(address: String?, features: Features, dial: StationDial, status: PlayerStatus,
                              loop: CurlMultiLoop, logger: Logger,
                              perform: @escaping @Sendable (MPRISAction) -> Void) -> DesktopSession? {
        guard features.mpris || features.notify, let address, !address.isEmpty else { return nil }
        let bus: SessionBus
        do throws(BusError) {
            bus = try SessionBus.connect(address: address,
                                         names: features.mpris ? MPRISPlayer.busNames(processID: getpid()) : [])
        } catch {
            logger.debug("no desktop bus: \(error)")
            return nil
        }
        let session = DesktopSession(bus: bus, loop: loop, dial: dial, features: features, status: status,
                                     logger: logger, perform: perform)
        if features.mpris {
            do throws(BusError) {
                try bus.serve(path: MPRISPlayer.objectPath) { [unowned session] call in session.answer(call) }
            } catch {
                logger.debug("no media controls: \(error)")
                bus.close()
                return nil
            }
        }
        loop.attach(session)
        return session
    }

    private init(bus: SessionBus, loop: CurlMultiLoop, dial: StationDial, features: Features, status: PlayerStatus,
                 logger: Logger, perform: @escaping @Sendable (MPRISAction) -> Void) {
        self.bus = bus
        self.descriptor = bus.descriptor
        self.loop = loop
        self.dial = dial
        self.features = features
        self.logger = logger
        self.perform = perform
        snapshot = MPRISSnapshot(status: status, dial: dial, tuning: 0)
        self.status = status
        notifiedTrack = status.trackNumber
    }

    /// The name the session owns on the bus, when it offers media controls.
    package var busName: String? { bus.name }

    /// The player's state or heard title changed: on any thread (the player's).
    package func playerChanged(_ status: PlayerStatus) {
        loop.schedule(after: 0) { [self] in update(status) }
    }

    /// Another station plays (Next, Previous): on any thread.
    package func tuned(to dial: StationDial) {
        loop.schedule(after: 0) { [self] in
            self.dial = dial
            tuning += 1
            // Nothing of the new station is heard yet: no title until the player says one is (it
            // counts them from 0 again, so its first is notified too).
            status.title = nil
            status.trackNumber = 0
            notifiedTrack = 0
            update(status)
        }
    }

    private func update(_ status: PlayerStatus) {
        guard !isClosed else { return }
        self.status = status
        let next = MPRISSnapshot(status: status, dial: dial, tuning: tuning)
        let changed = MPRISPlayer.changedProperties(from: snapshot, to: next)
        snapshot = next
        do throws(BusError) {
            if features.mpris, !changed.isEmpty {
                try bus.emitSignal(path: MPRISPlayer.objectPath, interface: "org.freedesktop.DBus.Properties",
                                   member: "PropertiesChanged",
                                   arguments: [.string(MPRISPlayer.playerInterface), .dictionary(changed), .strings([])])
            }
            if features.notify, status.trackNumber != notifiedTrack, let title = status.title {
                notifiedTrack = status.trackNumber
                try bus.callWithoutReply(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                         interface: "org.freedesktop.Notifications", member: "Notify",
                                         arguments: TitleNotification(title: title, stationName: dial.current.name).arguments)
            }
        } catch {
            logger.debug("desktop bus: \(error)")
        }
    }

    private func answer(_ call: borrowing BusCall) -> BusReply {
        let answer = MPRISPlayer.answer(call, snapshot: snapshot)
        if let action = answer.action { perform(action) }
        return answer.reply
    }

    // MARK: LoopDescriptorSource (the loop thread)

    package func interest() -> LoopInterest {
        let interest = bus.interest()
        return LoopInterest(events: UInt32(UInt16(bitPattern: interest.events)), timeout: interest.timeout)
    }

    package func ready(events: UInt32) -> Bool {
        do throws(BusError) {
            try bus.process()
            return true
        } catch {
            logger.info("desktop bus closed: media controls and notifications are off (\(error))")
            return false
        }
    }

    package func detached() {
        isClosed = true
        bus.close()
    }
}

/// org.freedesktop.Notifications' Notify for a title heard: the title as the summary, the artist
/// and station as the body.
struct TitleNotification: Sendable, Hashable {
    package let summary: String
    package let body: String

    package init(title: TrackInfo, stationName: String) {
        summary = BusText.inert(title.title.isEmpty ? title.raw : title.title)
        // Notification servers may read the body as markup: a title's `<` or `&` stays text.
        body = BusText.inert([title.artist, stationName].compactMap { $0 }.joined(separator: " · "))
            .replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
    }

    /// Notify(app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout):
    /// transient, so a day of radio does not fill the desktop's history.
    package var arguments: [BusValue] {
        [.string("airtap"), .uint32(0), .string("audio-x-generic"), .string(summary), .string(body), .strings([]),
         .dictionary([BusEntry("transient", .boolean(true)), BusEntry("desktop-entry", .string("airtap"))]), .int32(-1)]
    }
}
