import AirtapTestSupport
import CurlSource
import Glibc
import Locking
import TestStation
import Testing

/// Another library's descriptor in the curl loop: called when it is readable, when its timeout
/// passes, and detached when it says so or the loop shuts down. (POLLIN is EPOLLIN's bit.)
@Suite("The curl loop waits on other descriptors")
struct LoopDescriptorSourceTests {
    /// A pipe's read end. `timeout` is what it asks for; it reads what is there, and asks to be
    /// detached once it reads "x".
    final class PipeSource: LoopDescriptorSource {
        let descriptor: Int32
        let writer: Int32
        let timeout: Duration?
        let calls = Locked<[String]>([])
        let onLoopThread = Locked(true)
        let loop: Locked<CurlMultiLoop?> = Locked(nil)

        init(timeout: Duration?) {
            var ends: [Int32] = [0, 0]
            pipe(&ends)
            descriptor = ends[0]
            writer = ends[1]
            self.timeout = timeout
        }

        func interest() -> LoopInterest { LoopInterest(events: UInt32(POLLIN), timeout: timeout) }

        func ready(events: UInt32) -> Bool {
            loop.withLock { $0 }?.assertOnLoopThread()
            var bytes = [UInt8](repeating: 0, count: 16)
            let count = events & UInt32(POLLIN) != 0 ? read(descriptor, &bytes, 16) : 0
            let text = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self)
            calls.withLock { $0.append(events == 0 ? "timeout" : "read \(text)") }
            return text != "x"
        }

        func detached() {
            calls.withLock { $0.append("detached") }
            close(descriptor)
        }

        func send(_ text: String) {
            _ = text.withCString { write(writer, $0, strlen($0)) }
        }

        deinit { close(writer) }
    }

    @Test("Readable: ready with EPOLLIN on the loop thread; false detaches it")
    func readableAndDetached() async throws {
        let loop = CurlMultiLoop()
        defer { loop.shutdown() }
        let source = PipeSource(timeout: nil)
        source.loop.withLock { $0 = loop }
        loop.attach(source)
        source.send("a")
        try await waitFor("the first read") { source.calls.withLock { $0 } == ["read a"] }
        source.send("x")
        try await waitFor("the detach") { source.calls.withLock { $0 } == ["read a", "read x", "detached"] }
    }

    @Test("A timeout calls ready with no events; shutdown detaches")
    func timeoutAndShutdown() async throws {
        let loop = CurlMultiLoop()
        let source = PipeSource(timeout: .milliseconds(20))
        loop.attach(source)
        try await waitFor("a timeout") { source.calls.withLock { $0.contains("timeout") } }
        loop.shutdown()
        #expect(source.calls.withLock { $0.last } == "detached")
        #expect(!source.calls.withLock { $0.contains { $0.hasPrefix("read") } })
    }
}
