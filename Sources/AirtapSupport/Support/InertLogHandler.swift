import ICYWire
import Logging

/// Wraps the stderr and `--log` handlers so that no log line carries station text raw: the
/// message and every metadata value go through `InertText` (control characters escaped, so a
/// title cannot move the cursor, write the clipboard or forge a line), and a message is cut to
/// `maxMessageBytes` (a title is bounded already; this bounds what anything else can add).
struct InertLogHandler: LogHandler {
    package static let maxMessageBytes = 8192
    package static let maxValueBytes = 4096

    private var inner: any LogHandler

    package init(wrapping inner: any LogHandler) {
        self.inner = inner
    }

    package var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    package var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue.mapValues(Self.inert) }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map(Self.inert) }
    }

    package func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: InertText.render(event.message.description, maxUTF8Bytes: Self.maxMessageBytes))
        if let metadata = event.metadata {
            var inert: Logger.Metadata = [:]
            for (key, value) in metadata { inert[InertText.render(key)] = Self.inert(value) }
            event.metadata = inert
        }
        inner.log(event: event)
    }

    /// Every value becomes an inert string: a nested array or dictionary is rendered first.
    static func inert(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        .string(InertText.render(value.description, maxUTF8Bytes: maxValueBytes))
    }
}
