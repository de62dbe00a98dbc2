import Foundation
import TestStation

/// Real music for the fingerprint tests: the three pieces of Debian's `asc-music` (Michael
/// Kievernagel, GPL-2+; tools/install-deps), cut and re-encoded by ffmpeg as different stations
/// would send them. Tones fingerprint too alike to say anything about songs.
package enum RealMusic {
    package static let folder = "/usr/share/games/asc/music"
    package static let frontiers = folder + "/frontiers.mp3"
    package static let machineWars = folder + "/machine_wars.mp3"
    package static let timeToStrike = folder + "/time_to_strike.mp3"

    package static var isAvailable: Bool {
        FileManager.default.fileExists(atPath: frontiers) && FileManager.default.fileExists(atPath: "/usr/bin/ffmpeg")
    }

    /// `seconds` of `file` from `start`, as bare MPEG frames (no ID3 tag, no Info frame) at
    /// `bitrate` kbit/s, 44.1 kHz stereo: what a station's stream carries.
    package static func frames(_ file: String, from start: Double, seconds: Double, bitrate: Int) async throws -> [UInt8] {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-music-\(UUID().uuidString).mp3")
        defer { try? FileManager.default.removeItem(at: output) }
        try await ffmpeg(["-ss", "\(start)", "-t", "\(seconds)", "-i", file, "-ar", "44100", "-ac", "2",
                          "-c:a", "libmp3lame", "-b:a", "\(bitrate)k", "-write_xing", "0", "-id3v2_version", "0",
                          "-map_metadata", "-1", "-f", "mp3", output.path])
        return Array(try Data(contentsOf: output))
    }

    /// Writes `seconds` of `file` from `start` to `path` (the container from its extension),
    /// with a title and artist tag.
    package static func file(_ file: String, from start: Double, seconds: Double, to path: String, title: String, artist: String) async throws {
        try await ffmpeg(["-ss", "\(start)", "-t", "\(seconds)", "-i", file, "-map_metadata", "-1",
                          "-metadata", "title=\(title)", "-metadata", "artist=\(artist)", path])
    }

    private static func ffmpeg(_ arguments: [String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        process.arguments = ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ChildProcesses.run(process)
        defer { ChildProcesses.terminate(process) }
        guard await ChildProcesses.waitForExit(process, timeout: .seconds(60)), process.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown)
        }
    }
}
