@testable import AirtapRelay
import AirtapTestSupport
import NIOCore
import Testing

/// The ring's codec epochs and the listener machine, without sockets: a response carries one codec.
@Suite("Relay: codec epochs")
struct RelayFormatEpochTests {
    typealias Machine = RelayStateMachineTests

    @Test("A listener reads its epoch's packets, then ends with formatChanged; a burst starts no earlier than the new epoch")
    func responseEndsAtTheChange() {
        var ring = Machine.ring(count: 10)
        var machine = ListenerStateMachine(connectedAt: Machine.t0)
        #expect(machine.streamRequested(metaint: nil, ring: ring, burstSeconds: 100) == .sendHead)
        ring.startFormat()
        for index in 10..<15 { ring.append(audio: Machine.packet(index), duration: Machine.frameSeconds) }

        var audio: [UInt8] = [], end: ListenerStopReason?
        while let write = machine.nextWrite(from: ring) {
            switch write {
            case .audio(let buffer): audio += Array(buffer.readableBytesView)
            case .end(let reason): end = reason
            case .metadata, .skippedAhead: Issue.record("\(write)")
            }
        }
        #expect(audio == (0..<10).flatMap { Array(Machine.packet($0).readableBytesView) }, "the old epoch's packets, all of them")
        #expect(end == .formatChanged && machine.stopReason == .formatChanged)
        #expect(ring.burstStart(seconds: 100) == 10)

        var late = ListenerStateMachine(connectedAt: Machine.t0)
        _ = late.streamRequested(metaint: nil, ring: ring, burstSeconds: 100)
        let (bytes, _, _) = Machine.drain(&late, ring)
        #expect(bytes == (10..<15).flatMap { Array(Machine.packet($0).readableBytesView) })
        #expect(late.isStreaming)
    }
}
