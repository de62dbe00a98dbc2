import Foundation

/// Encodes the station's PCM as AAC LC in ADTS with ffmpeg's native `aac` encoder, run as a
/// subprocess (no AAC encoder library is packaged here, and fixtures are made, never committed).
///
/// ffmpeg reads and writes temporary files rather than pipes: one process, no pipe deadlock
/// between a full stdin and an unread stdout. Each call is one track with a fresh encoder, so its
/// frames decode on their own; ffmpeg adds its 1024-sample priming at the start as any encoder would.
enum AACToneEncoder {
    static func encode(_ pcm: [Int16], sampleRate: Int, channels: Int, bitrate: Int) throws(StationError) -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("airtap-teststation-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .encoding("cannot make a temporary folder: \(error.localizedDescription)")
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("tone.s16le")
        let output = directory.appendingPathComponent("tone.aac")
        // Little-endian s16 interleaved: what the tone generator makes on every Linux machine here.
        let data = pcm.withUnsafeBytes { Data($0) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error",
            "-f", "s16le", "-ar", "\(sampleRate)", "-ac", "\(channels)", "-i", input.path,
            "-c:a", "aac", "-b:a", "\(bitrate)k", "-f", "adts", "-y", output.path,
        ]
        let errors = ChildProcesses.pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do {
            try data.write(to: input)
            try ChildProcesses.spawn(process)
        } catch {
            throw .encoding("cannot run ffmpeg (tools/install-deps installs it): \(error.localizedDescription)")
        }
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let encoded = try? Data(contentsOf: output) else {
            let text = String(decoding: message.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw .encoding("ffmpeg's aac encoder failed (exit \(process.terminationStatus)): \(text)")
        }
        return [UInt8](encoded)
    }
}
