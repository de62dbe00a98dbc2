#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A detached pthread running one closure: the part of Foundation's `Thread` airtap uses
/// (`init { ... }`, `name`, `start()`), without linking Foundation. Like `Locked`, it is plain
/// pthreads, which ThreadSanitizer understands.
package final class PosixThread {
    private let body: @Sendable () -> Void
    /// Shown by `top -H`, `ps -L` and debuggers; Linux keeps the first 15 bytes. Set before `start()`.
    package var name: String?

    package init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    /// Starts the thread; it runs `body` once and ends. Nothing waits for it (detached).
    package func start() {
        let context = Context(body: body, name: name)
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let opaque = Unmanaged.passRetained(context).toOpaque()
        let status = pthread_create(&thread, &attributes, { raw in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
            if let name = context.name { PosixThread.nameCurrentThread(name) }
            context.body()
            return nil
        }, opaque)
        // Only a process out of threads or memory gets here; Foundation's Thread would crash too.
        precondition(status == 0, "pthread_create failed: \(String(cString: strerror(status)))")
    }

    private final class Context {
        let body: @Sendable () -> Void
        let name: String?

        init(body: @escaping @Sendable () -> Void, name: String?) {
            self.body = body
            self.name = name
        }
    }

    /// pthread_setname_np is not visible through the Glibc module; /proc/thread-self/comm is
    /// what it writes to (proc(5)). Best effort: a thread without a name works the same.
    private static func nameCurrentThread(_ name: String) {
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        #endif
    }
}
