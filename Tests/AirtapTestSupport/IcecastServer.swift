#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Locking
import TestStation

/// A private Icecast2 for one test: its own config, log folder and free port on 127.0.0.1.
///
/// Icecast refuses to start as root ("You should not run icecast2 as root") unless the config
/// has `<security><changeowner>`; CI runs as root, so then it drops to `nobody` right after
/// binding, and its log folder is made writable for that user. As any other user it simply
/// runs as that user.
package final class IcecastServer {
    package static let mount = "/airtap"
    package static let sourcePassword = "source-secret"
    package static let adminPassword = "admin-secret"
    /// Small, so the cuts land close to where the titles changed.
    package static let defaultMetaint = 4000

    /// Debian puts it in /usr/bin; other builds in /usr/sbin or /usr/local/bin.
    package static let executable: String? = ["/usr/bin/icecast2", "/usr/sbin/icecast2", "/usr/local/bin/icecast2", "/usr/bin/icecast"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    package static let ffmpeg: String? = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }
    package static var isAvailable: Bool { executable != nil && ffmpeg != nil }

    package let folder: URL
    package let port: Int
    /// The mount's `mp3-metadata-interval`: the bytes of audio between two metadata blocks.
    package let metaint: Int
    private(set) var process: Process

    package var streamURL: String { "http://127.0.0.1:\(port)\(Self.mount)" }
    package var sourceURL: String { "icecast://source:\(Self.sourcePassword)@127.0.0.1:\(port)\(Self.mount)" }
    package var errorLog: String { (try? String(contentsOf: folder.appendingPathComponent("log/error.log"), encoding: .utf8)) ?? "" }

    /// Starts Icecast and returns once its admin interface answers. `burstSize` is what a new
    /// listener gets from the past on connecting (Icecast's default is 64 KiB). `metaint`: 16000 is
    /// what most stations send, and a title then reaches a listener up to a second late.
    package static func start(burstSize: Int = 8000, metaint: Int = defaultMetaint) async throws -> IcecastServer {
        guard let executable else { throw Failure("icecast2 is not installed") }
        var lastError: any Error = Failure("no attempt")
        for _ in 0..<3 {  // a free port can be taken between probing and binding it
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-icecast-\(UUID().uuidString)")
            let logs = folder.appendingPathComponent("log")
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            let port = try freeLoopbackPort()
            let config = folder.appendingPathComponent("icecast.xml")
            try configuration(port: port, logs: logs.path, burstSize: burstSize, metaint: metaint).write(to: config, atomically: true, encoding: .utf8)
            if getuid() == 0 {
                // After changeowner Icecast writes its logs as nobody.
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
                try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: logs.path)
            }
            let process = try launch(executable, in: folder)
            let server = IcecastServer(folder: folder, port: port, metaint: metaint, process: process)
            do {
                try await server.waitUntilAnswering()
                return server
            } catch {
                lastError = error
                server.stop()
            }
        }
        throw lastError
    }

    /// icecast2 with the config in `folder`.
    private static func launch(_ executable: String, in folder: URL) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-c", folder.appendingPathComponent("icecast.xml").path]
        process.currentDirectoryURL = folder
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: touch(folder.appendingPathComponent("stdout")))
        process.standardError = try FileHandle(forWritingTo: touch(folder.appendingPathComponent("stderr")))
        try ChildProcesses.run(process)
        return process
    }

    /// Stops icecast2 and starts it again on the same port with the same config, as an operator's
    /// restart does: every source and listener is dropped. Returns once it answers again.
    package func restart() async throws {
        guard let executable = Self.executable else { throw Failure("icecast2 is not installed") }
        ChildProcesses.terminate(process)
        process = try Self.launch(executable, in: folder)
        try await waitUntilAnswering()
    }

    private init(folder: URL, port: Int, metaint: Int, process: Process) {
        self.folder = folder
        self.port = port
        self.metaint = metaint
        self.process = process
    }

    /// `source-timeout` is long: a test's source can be silent while the test waits for an event
    /// (a fed source between its pieces, a station paused until a listener joins), and a task
    /// pool CPU-bound tests hold for tens of seconds can stretch that wait past a minute.
    package static func configuration(port: Int, logs: String, burstSize: Int, metaint: Int) -> String {
        let security = getuid() == 0 ? """
              <security>
                <chroot>0</chroot>
                <changeowner><user>nobody</user><group>nogroup</group></changeowner>
              </security>
            """ : ""
        return """
            <icecast>
              <location>airtap tests</location>
              <admin>airtap@localhost</admin>
              <hostname>127.0.0.1</hostname>
              <limits>
                <clients>20</clients>
                <sources>2</sources>
                <queue-size>524288</queue-size>
                <client-timeout>30</client-timeout>
                <header-timeout>15</header-timeout>
                <source-timeout>600</source-timeout>
                <burst-size>\(burstSize)</burst-size>
              </limits>
              <authentication>
                <source-password>\(sourcePassword)</source-password>
                <relay-password>\(sourcePassword)</relay-password>
                <admin-user>admin</admin-user>
                <admin-password>\(adminPassword)</admin-password>
              </authentication>
              <listen-socket>
                <port>\(port)</port>
                <bind-address>127.0.0.1</bind-address>
              </listen-socket>
              <mount type="normal">
                <mount-name>\(mount)</mount-name>
                <mp3-metadata-interval>\(metaint)</mp3-metadata-interval>
                <charset>UTF-8</charset>
              </mount>
              <fileserve>1</fileserve>
              <paths>
                <basedir>/usr/share/icecast2</basedir>
                <logdir>\(logs)</logdir>
                <webroot>/usr/share/icecast2/web</webroot>
                <adminroot>/usr/share/icecast2/admin</adminroot>
                <alias source="/" destination="/status.xsl"/>
              </paths>
              <logging>
                <accesslog>access.log</accesslog>
                <errorlog>error.log</errorlog>
                <loglevel>3</loglevel>
              </logging>
            \(security)
            </icecast>
            """
    }

    private func waitUntilAnswering() async throws {
        // Generous: icecast2 starts in milliseconds, but not on a machine three times slower than
        // a busy CI runner.
        var patience = Patience(seconds: 30)
        while !patience.isSpent() {
            guard process.isRunning else {
                throw Failure("icecast2 exited with \(process.terminationStatus): \(output("stderr")) \(errorLog)")
            }
            if let stats = try? await admin("/admin/stats"), stats.status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure("icecast2 did not answer on port \(port) within 30 s: \(errorLog)")
    }

    private func output(_ name: String) -> String {
        (try? String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)) ?? ""
    }

    /// A GET with the admin's basic auth.
    package func admin(_ pathAndQuery: String) async throws -> StationClient.Response {
        let credentials = Data("admin:\(Self.adminPassword)".utf8).base64EncodedString()
        return try await StationClient.fetch(port: port, path: pathAndQuery, headers: [("Authorization", "Basic \(credentials)")],
                                             timeout: .seconds(30))
    }

    /// Whether a source is connected to the mount.
    package func mountIsLive(_ mount: String = IcecastServer.mount) async -> Bool {
        guard let answer = try? await admin("/admin/listmounts") else { return false }
        return String(decoding: answer.body, as: UTF8.self).contains("<source mount=\"\(mount)\"")
    }

    /// Drops the mount's source client, as an operator does with Icecast's admin page.
    package func killSource(_ mount: String) async throws {
        let answer = try await admin("/admin/killsource?mount=\(mount)")
        let body = String(decoding: answer.body, as: UTF8.self)
        guard answer.status == 200, body.contains("Source Removed") else {
            throw Failure("killsource \(mount) failed: \(answer.statusLine) \(body)")
        }
    }

    /// How many listeners the mount has (/admin/stats), 0 while it has no source.
    package func listenerCount() async -> Int {
        guard let answer = try? await admin("/admin/stats") else { return 0 }
        let text = String(decoding: answer.body, as: UTF8.self)
        guard let source = text.range(of: "<source mount=\"\(Self.mount)\">") else { return 0 }
        let rest = text[source.upperBound...]
        guard let open = rest.range(of: "<listeners>"),
              let close = rest[open.upperBound...].range(of: "</listeners>") else { return 0 }
        return Int(rest[open.upperBound..<close.lowerBound]) ?? 0
    }

    /// Sets the stream title the way source clients and DJ tools do: `/admin/metadata?mode=updinfo`.
    package func updateTitle(_ song: String) async throws {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = song.addingPercentEncoding(withAllowedCharacters: allowed) ?? song
        let answer = try await admin("/admin/metadata?mount=\(Self.mount)&mode=updinfo&charset=UTF-8&song=\(encoded)")
        let body = String(decoding: answer.body, as: UTF8.self)
        guard answer.status == 200, body.contains("Metadata update successful") else {
            throw Failure("updinfo '\(song)' failed: \(answer.statusLine) \(body)")
        }
    }

    /// SIGTERM, then SIGKILL after 3 s; removes the folder. Safe to call more than once.
    package func stop() {
        ChildProcesses.terminate(process)
        try? FileManager.default.removeItem(at: folder)
    }

    /// A port nobody listens on right now, from the kernel.
    package static func freeLoopbackPort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure("socket: errno \(errno)") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(socket, raw, length) == 0 && getsockname(socket, raw, &length) == 0
            }
        }
        guard bound else { throw Failure("bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(_ description: String) { self.description = description }
    }
}

/// ffmpeg as an Icecast source client: sends MP3 (or ADTS) as is (`-c copy`) through a
/// `SourceTap` that counts what reaches Icecast, so a test can act when the source reaches a given
/// byte. It reads a file paced in real time (`-re`), or (`feeding:`) what the test hands it, which
/// this class paces: a test can then hold the next track back until it has set that track's title.
///
/// Counted on the wire, not from ffmpeg's `-progress`: ffmpeg reports at most every
/// `-stats_period` and only as it handles a packet, so after a stall it can send a whole burst
/// behind one report and then wait for input that the test holds back until the report comes.
package final class IcecastSource {
    package let process: Process
    private let tap: SourceTap
    /// Our end of the socket pair that is ffmpeg's stdin when the test feeds it (-1 when it reads
    /// a file), and the serial queue that writes to it in real time and closes it once: the
    /// writes sleep and block, and must not hold the tests' cooperative threads. A socket, not a
    /// pipe, so a write after ffmpeg died is EPIPE (MSG_NOSIGNAL), not a SIGPIPE that kills the
    /// test process. (Paced here, not by ffmpeg's `-re`: after its input ran dry for seconds,
    /// ffmpeg 5.1 with `-re` once read the next track and sent none of it.)
    private let input: Int32
    private let bytesPerSecond: Int
    private let writer = DispatchQueue(label: "airtap.tests.icecast-source")
    private let inputClosed = Locked(false)

    /// `adts`: the file is AAC in ADTS (as `ffmpeg -c:a aac -f adts` makes it), sent as audio/aac.
    package convenience init(file: String, server: IcecastServer, name: String, adts: Bool = false) throws {
        try self.init(input: file, server: server, name: name, adts: adts, bytesPerSecond: 0)
    }

    /// Sends what `feed` hands it, `bytesPerSecond` (the stream's bitrate); `finish` ends it.
    package convenience init(feeding server: IcecastServer, name: String, adts: Bool = false, bytesPerSecond: Int) throws {
        try self.init(input: nil, server: server, name: name, adts: adts, bytesPerSecond: bytesPerSecond)
    }

    private init(input file: String?, server: IcecastServer, name: String, adts: Bool, bytesPerSecond: Int) throws {
        guard let ffmpeg = IcecastServer.ffmpeg else { throw IcecastServer.Failure("ffmpeg is not installed") }
        let tap = try SourceTap(to: server.port)
        self.tap = tap
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ffmpeg)
        let reading = file.map { ["-re", "-f", adts ? "aac" : "mp3", "-i", $0] } ?? ["-f", adts ? "aac" : "mp3", "-i", "pipe:0"]
        let format = adts
            ? reading + ["-c", "copy", "-content_type", "audio/aac"]
            : reading + ["-c", "copy", "-id3v2_version", "0", "-write_xing", "0", "-content_type", "audio/mpeg"]
        process.arguments = [
            "-nostdin", "-hide_banner", "-loglevel", "error", "-nostats",
        ] + format + [
            "-ice_name", name, "-ice_genre", "Test Tones",
            "-f", adts ? "adts" : "mp3", "icecast://source:\(IcecastServer.sourcePassword)@127.0.0.1:\(tap.port)\(IcecastServer.mount)",
        ]
        self.bytesPerSecond = bytesPerSecond
        var ffmpegEnd: FileHandle?
        if file == nil {
            var ends: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
                throw IcecastServer.Failure("socketpair: errno \(errno)")
            }
            input = ends[0]
            ffmpegEnd = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
            process.standardInput = ffmpegEnd
        } else {
            process.standardInput = FileHandle.nullDevice
            input = -1
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.standardError
        self.process = process
        do {
            try ChildProcesses.run(process)
        } catch {
            if input >= 0 { close(input) }
            tap.stop()
            throw error
        }
        try? ffmpegEnd?.close()  // ffmpeg has its own copy now (Process does not close it)
    }

    /// The bytes of the stream (after the source's request head) Icecast has been handed.
    package var bytesSent: Int { tap.bodyBytes }

    /// Hands ffmpeg the next bytes in real time (a source made with `feeding:`); returns at once.
    /// When the test feeds nothing for a while, the source pauses and then goes on at the same
    /// pace, with no burst to catch up.
    package func feed(_ bytes: ArraySlice<UInt8>) {
        guard input >= 0 else { return }
        let input = input, closed = inputClosed
        // At most 1 KB (a twentieth of a second) a write, so the source runs smoothly.
        let rate = max(1, bytesPerSecond), chunk = max(1, min(bytesPerSecond / 20, 1024))
        writer.async {
            // Paced against the clock, not by adding up sleeps, so time spent blocked in `send`
            // does not slow the source below real time.
            var due = ContinuousClock.now
            var offset = bytes.startIndex
            while offset < bytes.endIndex, !closed.withLock({ $0 }) {
                let end = min(bytes.endIndex, offset + chunk)
                var written = 0
                while offset + written < end {
                    let result = bytes[(offset + written)..<end].withUnsafeBytes { send(input, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if result > 0 { written += result } else if result < 0 && errno != EINTR { return }
                }
                offset = end
                due += .microseconds(1_000_000 * written / rate)
                let ahead = ContinuousClock.now.duration(to: due)
                if ahead > .zero {
                    usleep(UInt32(clamping: ahead.components.seconds * 1_000_000 + ahead.components.attoseconds / 1_000_000_000_000))
                }
            }
        }
    }

    /// Ends the input after everything fed: ffmpeg sends the rest and exits. Closes it once.
    package func finish() {
        guard input >= 0 else { return }
        let input = input, closed = inputClosed
        writer.async {
            if closed.withLock({ let was = $0; $0 = true; return !was }) { close(input) }
        }
    }

    /// Waits until ffmpeg has sent `offset` bytes of the file (or ended).
    /// The timeout only bounds a hang.
    package func waitUntilSent(_ offset: Int, timeout: Duration = .seconds(120)) async throws {
        var patience = Patience(timeout)
        while bytesSent < offset {
            guard process.isRunning else { throw IcecastServer.Failure("ffmpeg ended (\(process.terminationStatus)) at byte \(bytesSent), before \(offset)") }
            guard !patience.isSpent() else { throw IcecastServer.Failure("Icecast got only \(bytesSent) of \(offset) bytes from ffmpeg in time") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    package func stop() {
        ChildProcesses.terminate(process)  // first, so a write blocked on a full socket fails
        finish()
        tap.stop()
    }
}

/// A one-connection TCP relay on 127.0.0.1 between a source client and Icecast that counts the
/// request body it has handed on: what Icecast has been given, exactly and at once. Each direction
/// is a thread doing blocking reads and writes; an end seen on one side is passed to the other.
final class SourceTap: Sendable {
    let port: Int
    private let body = Locked(0)
    /// The descriptors still open, and whether `stop` came. Each is shut down (by `stop`) and
    /// closed (by the relay) only under this lock, and forgotten as it closes: a descriptor
    /// number shut down after its close could be another socket of this process by then (one
    /// was Foundation's watch on a child process, whose reaping then hung the whole test run).
    private struct Descriptors {
        var listener: Int32?
        var client: Int32?
        var server: Int32?
        var stopped = false

        mutating func closeListener() {
            if let listener { Glibc.close(listener) }
            listener = nil
        }

        mutating func closeConnection() {
            for descriptor in [client, server].compactMap({ $0 }) { Glibc.close(descriptor) }
            client = nil
            server = nil
        }
    }
    private let descriptors: Locked<Descriptors>

    init(to serverPort: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw IcecastServer.Failure("socket: errno \(errno)") }
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(listener, raw, length) == 0 && getsockname(listener, raw, &length) == 0 && listen(listener, 1) == 0
            }
        }
        guard bound else {
            close(listener)
            throw IcecastServer.Failure("bind: errno \(errno)")
        }
        descriptors = Locked(Descriptors(listener: listener))
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in relay(listener: listener, to: serverPort) }.start()
    }

    var bodyBytes: Int { body.withLock { $0 } }

    /// Ends the relay: a pending accept returns, both connections close.
    func stop() {
        descriptors.withLock { open in
            open.stopped = true
            for descriptor in [open.listener, open.client, open.server].compactMap({ $0 }) {
                shutdown(descriptor, Int32(SHUT_RDWR))
            }
        }
    }

    /// `listener` is open until this closes it: only `stop` shuts it down meanwhile, under the lock.
    private func relay(listener: Int32, to serverPort: Int) {
        let client = accept(listener, nil, nil)
        descriptors.withLock { $0.closeListener() }
        guard client >= 0 else { return }
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = Self.loopback(port: serverPort)
        let connected = server >= 0 && withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(client)
            if server >= 0 { close(server) }
            return
        }
        descriptors.withLock { open in
            open.client = client
            open.server = server
            if open.stopped {
                shutdown(client, Int32(SHUT_RDWR))
                shutdown(server, Int32(SHUT_RDWR))
            }
        }
        // Each direction ends on its own (an end or an error is passed across); the sockets
        // close once both have.
        let answered = DispatchSemaphore(value: 0)
        Thread {
            Self.pump(from: server, to: client, counting: nil)
            answered.signal()
        }.start()
        Self.pump(from: client, to: server, counting: body)
        answered.wait()
        descriptors.withLock { $0.closeConnection() }
    }

    /// Copies until an end or an error, then passes it on (`shutdown` the write side, or both on
    /// an error). `counting`: add the bytes after the first blank line (the end of the request head).
    private static func pump(from source: Int32, to destination: Int32, counting: Locked<Int>?) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        var headEnd: [UInt8] = []  // the last bytes of the head seen, until "\r\n\r\n"
        var inBody = false
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if count == 0 { shutdown(destination, Int32(SHUT_WR)); return }
            if count < 0 {
                if errno == EINTR { continue }
                shutdown(destination, Int32(SHUT_RDWR))
                return
            }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + written, count - written, Int32(MSG_NOSIGNAL)) }
                if result < 0 {
                    if errno == EINTR { continue }
                    shutdown(source, Int32(SHUT_RDWR))
                    return
                }
                written += result
            }
            guard let counting else { continue }
            var bodyStart = 0
            if !inBody {
                // The head is short; look for its end across reads.
                headEnd += buffer[0..<count]
                guard let end = headEnd.firstRange(of: [13, 10, 13, 10] as [UInt8]) else {
                    headEnd = Array(headEnd.suffix(3))
                    continue
                }
                inBody = true
                bodyStart = count - (headEnd.count - end.upperBound)
                headEnd = []
            }
            counting.withLock { $0 += count - bodyStart }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

/// A programme cut for a fed source: each piece runs from just past one track's first byte to
/// just past the next's, so the source sends a track's first bytes, then waits there until the
/// test has seen them sent, set that track's title and fed the next piece. However late the
/// test runs, a title never goes in behind the one before it (Icecast then drops the first
/// before any listener's metadata interval) and lands at most `lead` bytes into its track.
package struct TrackFeed {
    /// More than ffmpeg keeps back of what it has read (up to about 4 KB when no more comes).
    package static let lead = 8000

    package let bytes: [UInt8]
    /// Where each track starts in `bytes`; the first is 0.
    package let boundaries: [Int]

    package init(bytes: [UInt8], boundaries: [Int]) {
        self.bytes = bytes
        self.boundaries = boundaries
    }

    /// Piece 0: the first track and the lead of the second; piece i: the rest up to the lead of
    /// track i + 1 (the last piece runs to the end).
    package func piece(_ index: Int) -> ArraySlice<UInt8> {
        precondition(index < boundaries.count && boundaries == boundaries.sorted(), "a piece of a track that is not there")
        let start = index == 0 ? 0 : min(bytes.count, boundaries[index] + Self.lead)
        let end = index + 1 < boundaries.count ? min(bytes.count, boundaries[index + 1] + Self.lead) : bytes.count
        return bytes[start..<max(start, end)]
    }
}

package extension ChildProcesses {
    /// Starts the built `airtap` with its stdout and stderr in files beside `folder`.
    ///
    /// With SIGPIPE at its default action, as a shell starts it: this test process ignores
    /// SIGPIPE (SwiftNIO does, for the whole process) and a child inherits that, which would hide
    /// a write to a closed socket that kills airtap when a user runs it.
    /// `environment` adds to (or overrides) what the child inherits, e.g. its own XDG_STATE_HOME.
    static func startAirtap(_ arguments: [String], in folder: URL, name: String, environment extra: [String: String] = [:]) throws -> Process {
        let process = Process()
        let airtap = AirtapBinary.directory.appendingPathComponent("airtap")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["--default-signal=PIPE", airtap.path] + arguments
        process.currentDirectoryURL = folder
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: touch(folder.appendingPathComponent("\(name).out")))
        process.standardError = try FileHandle(forWritingTo: touch(folder.appendingPathComponent("\(name).err")))
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = folder.path
        environment["XDG_CONFIG_HOME"] = folder.path
        environment.merge(extra) { _, added in added }
        process.environment = environment
        try run(process)
        return process
    }
}

@discardableResult
private func touch(_ url: URL) -> URL {
    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    return url
}
