import AirtapKit
@testable import AirtapRelay
import AirtapStations
import AirtapTestSupport
import NIOHTTP1
import Testing

/// The ids stations.json refuses are exactly the ones the relay could not give a mount of their own.
@Suite("Reserved station ids and the relay's routes")
struct ReservedMountTests {
    @Test("Every reserved id is a path the server answers itself; an ordinary id gets its own mount")
    func reservedIDsAreServerPaths() {
        for id in Station.reservedIDs.sorted() {
            let route = RelayRoute(method: .GET, uri: "/" + id, stationIDs: ["first", id])
            #expect(route != .stream(1), "/\(id) reaches the station, so it need not be reserved")
            #expect(Station.problem(withID: id) != nil)
        }
        #expect(RelayRoute(method: .GET, uri: "/;x", stationIDs: ["first", ";x"]) == .stream(0))
        #expect(RelayRoute(method: .GET, uri: "/jazz", stationIDs: ["first", "jazz"]) == .stream(1))
        #expect(Station.problem(withID: "jazz") == nil)
    }

    @Test("A request target in absolute form (http://host:port/path, as HTTP/1.1 servers must accept) routes by its path")
    func absoluteFormRoutesByPath() {
        let ids = ["first", "jazz"]
        #expect(RelayRoute(method: .GET, uri: "http://127.0.0.1:8000/status", stationIDs: ids) == .status)
        #expect(RelayRoute(method: .GET, uri: "HTTP://Example.org/jazz?type=.mp3", stationIDs: ids) == .stream(1))
        #expect(RelayRoute(method: .GET, uri: "https://host", stationIDs: ids) == .page)
        #expect(RelayRoute(method: .GET, uri: "http://host/nothing", stationIDs: ids) == .notFound)
        // Not absolute form: a path that merely contains a scheme stays a path.
        #expect(RelayRoute(method: .GET, uri: "/http://host/status", stationIDs: ids) == .notFound)
    }
}
