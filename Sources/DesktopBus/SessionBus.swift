import CSystemdBus
import Glibc

/// Why the bus cannot be used: it could not be reached, or it went away.
package struct BusError: Error, Sendable, CustomStringConvertible {
    package let call: String
    package let code: Int32

    package var description: String { "D-Bus: \(call): \(String(cString: strerror(code)))" }
}

/// What the bus's descriptor waits for: poll events (`POLLIN`, `POLLOUT`), and how long until
/// `process()` is due anyway (a method call's timeout, or messages already read and waiting).
package struct BusInterest: Sendable, Hashable {
    package let events: Int16
    package let timeout: Duration?
}

/// A D-Bus method call being answered. Valid only inside the handler it was passed to.
package struct BusCall: ~Copyable {
    fileprivate let message: OpaquePointer

    package var interface: String { sd_bus_message_get_interface(message).map { String(cString: $0) } ?? "" }
    package var member: String { sd_bus_message_get_member(message).map { String(cString: $0) } ?? "" }

    /// The next argument as a string; nil when it is not one.
    package func readString() -> String? {
        var text: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "s")), &text) > 0, let text else { return nil }
        return String(cString: text)
    }

    /// The next argument as a variant holding a double; nil when it is anything else.
    package func readVariantDouble() -> Double? {
        guard sd_bus_message_enter_container(message, CChar(UInt8(ascii: "v")), "d") > 0 else { return nil }
        var value: Double = 0
        guard sd_bus_message_read_basic(message, CChar(UInt8(ascii: "d")), &value) > 0 else { return nil }
        _ = sd_bus_message_exit_container(message)
        return value
    }
}

/// How a handler answers a method call.
package enum BusReply: Sendable {
    case values([BusValue])
    case error(name: String, message: String)
    /// Not this object's call: sd-bus answers with UnknownMethod.
    case unhandled
}

/// A connection to a session bus, driven from outside: the owner waits on `descriptor` for
/// `interest()` and calls `process()`; sd-bus itself starts no thread.
///
/// Not thread-safe (sd-bus is not): after `connect`, use it from one thread only.
package final class SessionBus {
    private var bus: OpaquePointer?
    /// The well-known name this connection owns, if it asked for one.
    package let name: String?
    private var handlers: [Unmanaged<BusHandlerBox>] = []

    /// Connects to the bus at `address` (`DBUS_SESSION_BUS_ADDRESS`'s form) and takes the first
    /// of `names` that is free (none when `names` is empty). Blocks for the handshake, at most `timeout` per answer.
    package static func connect(address: String, names: [String], timeout: Duration = .seconds(2)) throws(BusError) -> SessionBus {
        var bus: OpaquePointer?
        try check("sd_bus_new", sd_bus_new(&bus))
        guard let bus else { throw BusError(call: "sd_bus_new", code: ENOMEM) }
        do throws(BusError) {
            try check("sd_bus_set_address", sd_bus_set_address(bus, address))
            try check("sd_bus_set_bus_client", sd_bus_set_bus_client(bus, 1))
            try check("sd_bus_set_method_call_timeout", sd_bus_set_method_call_timeout(bus, UInt64(timeout.microseconds)))
            try check("sd_bus_start", sd_bus_start(bus))
            if names.isEmpty { return SessionBus(bus: bus, name: nil) }
            var result: Int32 = -EEXIST
            for name in names {
                result = sd_bus_request_name(bus, name, 0)
                if result >= 0 { return SessionBus(bus: bus, name: name) }
                guard result == -EEXIST else { break }
            }
            throw BusError(call: "sd_bus_request_name", code: -result)
        } catch {
            sd_bus_flush_close_unref(bus)
            throw error
        }
    }

    private init(bus: OpaquePointer, name: String?) {
        self.bus = bus
        self.name = name
    }

    deinit { close() }

    private static func check(_ call: String, _ result: Int32) throws(BusError) {
        if result < 0 { throw BusError(call: call, code: -result) }
    }

    package var descriptor: Int32 { bus.map { sd_bus_get_fd($0) } ?? -1 }

    package func interest() -> BusInterest {
        guard let bus else { return BusInterest(events: 0, timeout: nil) }
        let events = sd_bus_get_events(bus)
        var deadline: UInt64 = 0
        var timeout: Duration?
        if sd_bus_get_timeout(bus, &deadline) >= 0, deadline != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            timeout = .microseconds(deadline > nowMicroseconds ? Int64(deadline - nowMicroseconds) : 0)
        }
        return BusInterest(events: Int16(clamping: max(0, events)), timeout: timeout)
    }

    /// Reads, dispatches and writes what is pending, at most `limit` messages (the rest on the
    /// next call: `interest()` then asks for no wait). Throws once the connection is gone.
    package func process(limit: Int = 64) throws(BusError) {
        guard let bus else { throw BusError(call: "sd_bus_process", code: ENOTCONN) }
        for _ in 0..<limit {
            let result = sd_bus_process(bus, nil)
            try Self.check("sd_bus_process", result)
            if result == 0 { return }
        }
    }

    /// Answers every method call to `path` with `handler` (D-Bus Peer calls sd-bus answers itself).
    package func serve(path: String, _ handler: @escaping (borrowing BusCall) -> BusReply) throws(BusError) {
        guard let bus else { throw BusError(call: "sd_bus_add_object", code: ENOTCONN) }
        let box = Unmanaged.passRetained(BusHandlerBox(handler))
        handlers.append(box)
        try Self.check("sd_bus_add_object", sd_bus_add_object(bus, nil, path, busCallHandler, box.toOpaque()))
    }

    /// Sends a signal from `path`.
    package func emitSignal(path: String, interface: String, member: String, arguments: [BusValue]) throws(BusError) {
        guard let bus else { throw BusError(call: "sd_bus_message_new_signal", code: ENOTCONN) }
        var message: OpaquePointer?
        try Self.check("sd_bus_message_new_signal", sd_bus_message_new_signal(bus, &message, path, interface, member))
        try send(message, arguments: arguments)
    }

    /// Calls a method without waiting for its answer (a reply, or an error, is dropped when it arrives).
    package func callWithoutReply(destination: String, path: String, interface: String, member: String,
                                  arguments: [BusValue]) throws(BusError) {
        guard let bus else { throw BusError(call: "sd_bus_message_new_method_call", code: ENOTCONN) }
        var message: OpaquePointer?
        try Self.check("sd_bus_message_new_method_call",
                       sd_bus_message_new_method_call(bus, &message, destination, path, interface, member))
        try send(message, arguments: arguments)
    }

    private func send(_ message: OpaquePointer?, arguments: [BusValue]) throws(BusError) {
        guard let bus, let message else { throw BusError(call: "sd_bus_send", code: ENOTCONN) }
        defer { sd_bus_message_unref(message) }
        for argument in arguments { try Self.check("sd_bus_message_append", Self.append(argument, to: message)) }
        try Self.check("sd_bus_send", sd_bus_send(bus, message, nil))
    }

    /// Flushes what is queued and closes the connection; the name goes with it.
    package func close() {
        guard let bus else { return }
        self.bus = nil
        sd_bus_flush_close_unref(bus)
        for handler in handlers { handler.release() }
        handlers.removeAll()
    }

    fileprivate static func answer(_ call: OpaquePointer, with reply: BusReply) -> Int32 {
        switch reply {
        case .unhandled:
            return 0
        case .error(let name, let message):
            return csdbus_reply_error(call, name, message)
        case .values(let values):
            var answer: OpaquePointer?
            var result = sd_bus_message_new_method_return(call, &answer)
            guard result >= 0, let answer else { return result }
            defer { sd_bus_message_unref(answer) }
            for value in values {
                result = append(value, to: answer)
                if result < 0 { return result }
            }
            result = sd_bus_send(nil, answer, nil)
            return result < 0 ? result : 1
        }
    }

    /// Appends one value in its own signature; a negative errno when sd-bus refuses it.
    static func append(_ value: BusValue, to message: OpaquePointer) -> Int32 {
        func type(_ character: Unicode.Scalar) -> CChar { CChar(UInt8(ascii: character)) }
        func basic<T>(_ character: Unicode.Scalar, _ value: T) -> Int32 {
            withUnsafePointer(to: value) { sd_bus_message_append_basic(message, type(character), $0) }
        }
        func container(_ character: Unicode.Scalar, _ contents: String, _ body: () -> Int32) -> Int32 {
            var result = sd_bus_message_open_container(message, type(character), contents)
            guard result >= 0 else { return result }
            result = body()
            guard result >= 0 else { return result }
            return sd_bus_message_close_container(message)
        }
        switch value {
        case .string(let text):
            return text.withCString { sd_bus_message_append_basic(message, type("s"), $0) }
        case .objectPath(let path):
            return path.withCString { sd_bus_message_append_basic(message, type("o"), $0) }
        case .boolean(let flag):
            return basic("b", Int32(flag ? 1 : 0))
        case .double(let number):
            return basic("d", number)
        case .int32(let number):
            return basic("i", number)
        case .uint32(let number):
            return basic("u", number)
        case .int64(let number):
            return basic("x", number)
        case .strings(let texts):
            return container("a", "s") {
                for text in texts {
                    let result = append(.string(text), to: message)
                    if result < 0 { return result }
                }
                return 0
            }
        case .dictionary(let entries):
            return container("a", "{sv}") {
                for entry in entries {
                    let result = container("e", "sv") {
                        let key = append(.string(entry.key), to: message)
                        return key < 0 ? key : append(.variant(entry.value), to: message)
                    }
                    if result < 0 { return result }
                }
                return 0
            }
        case .variant(let inner):
            return container("v", inner.signature) { append(inner, to: message) }
        }
    }
}

private final class BusHandlerBox {
    let handle: (borrowing BusCall) -> BusReply
    init(_ handle: @escaping (borrowing BusCall) -> BusReply) { self.handle = handle }
}

// A capture-free closure converts to sd-bus's handler type; the Swift handler rides in userdata.
private let busCallHandler: sd_bus_message_handler_t = { message, context, _ in
    guard let message, let context else { return 0 }
    let box = Unmanaged<BusHandlerBox>.fromOpaque(context).takeUnretainedValue()
    return SessionBus.answer(message, with: box.handle(BusCall(message: message)))
}

private extension Duration {
    var microseconds: Int64 { components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000 }
}
