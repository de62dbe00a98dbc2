import AirtapKit
@testable import AirtapRelay
import AirtapStations
import AirtapTestSupport
import Foundation
import ICYWire
import TestStation
import Testing

/// A mount whose codec changes (an MP3 ad in an AAC stream, and back): one response carries one
/// codec, so a listener's response ends at the change and its reconnect gets the new codec.
@Suite("Relay server: codec change")
struct RelayCodecChangeTests {
    @Test("A listener of the MP3 part gets every MP3 byte, then its response ends; a listener after the change gets audio/aac and AAC only")
    func codecChangeEndsResponses() async throws {
        let mp3 = Programs.short.packets(count: 60)
        let aac = try await HLSStationTests.program(.aac).packets(count: 60)
        let station = Station(id: "fed", name: "Fed", urls: ["http://127.0.0.1:9/unused"])
        let relay = try await RelayServer.start(RelayConfiguration(station: station, port: 0, burstSeconds: 30), logger: RelayServerTests.logger)
        try relay.sink.receive(.format(mp3[0].header))
        for packet in mp3 { try relay.sink.receive(.packet(packet)) }
        let mp3Bytes = mp3.flatMap(\.bytes)

        let before = try await RelayTestListener.connect(port: relay.port)
        try await waitFor("the MP3 listener's burst") { before.bodyCount == mp3Bytes.count }
        #expect(before.received.head?.lowercased().contains("content-type: audio/mpeg") == true, "\(before.received.head ?? "")")

        try relay.sink.receive(.format(aac[0].header))
        for packet in aac { try relay.sink.receive(.packet(packet)) }
        let aacBytes = aac.flatMap(\.bytes)
        try await waitFor("the MP3 listener's response to end, or AAC to reach it") { before.isClosed || before.bodyCount > mp3Bytes.count }
        #expect(before.isClosed, "\(before.diagnosis)")
        #expect(before.received.body == mp3Bytes, "\(before.bodyCount) bytes, \(mp3Bytes.count) of MP3")

        let after = try await RelayTestListener.connect(port: relay.port)
        try await waitFor("the AAC listener's burst") { after.bodyCount >= aacBytes.count || after.isClosed }
        #expect(after.received.head?.lowercased().contains("content-type: audio/aac") == true, "\(after.received.head ?? "")")
        #expect(after.received.body == aacBytes, "\(after.bodyCount) bytes, \(aacBytes.count) of AAC")
        await before.close()
        await after.close()
        await relay.shutdown()
    }
}
