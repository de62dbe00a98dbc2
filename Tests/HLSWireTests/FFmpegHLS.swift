import Foundation
import TestStation

/// HLS written by ffmpeg's own `-f hls` muxer from a tone, made once per test process in a
/// temporary folder: real segments without committing binary fixtures.
enum FFmpegHLS {
    struct Output {
        let folder: URL

        func bytes(_ name: String) throws -> [UInt8] {
            [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
        }

        func text(_ name: String) throws -> String {
            try String(decoding: Data(contentsOf: folder.appendingPathComponent(name)), as: UTF8.self)
        }
    }

    enum Failure: Error { case ffmpegFailed(String) }

    /// AAC in MPEG-TS (`ts.m3u8`, ts0.ts...), AAC in fMP4 (`fm.m3u8`, init.mp4, f0.m4s...),
    /// MP3 in MPEG-TS (`mp3.m3u8`, m0.ts...): 5 s of 440 Hz at 44.1 kHz in 2 s segments, VOD.
    /// Made once, on a thread of its own: a test awaits it instead of holding a pool thread in a
    /// static initializer while ffmpeg runs (every pool thread waiting there froze the test process).
    static let shared = Task<Output, any Error> {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try make() }) }.start()
        }
    }

    private static func make() throws -> Output {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-ffmpeg-hls-\(getpid())")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let tone = ["-f", "lavfi", "-i", "sine=frequency=440:duration=5:sample_rate=44100"]
        let hls = ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod"]
        try ffmpeg(tone + ["-c:a", "aac", "-b:a", "64k"] + hls + ["-hls_segment_type", "mpegts", "-hls_segment_filename", "ts%d.ts", "ts.m3u8"], in: folder)
        try ffmpeg(tone + ["-c:a", "aac", "-b:a", "64k"] + hls
            + ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4", "-hls_segment_filename", "f%d.m4s", "fm.m3u8"], in: folder)
        try ffmpeg(tone + ["-c:a", "libmp3lame", "-b:a", "64k"] + hls + ["-hls_segment_filename", "m%d.ts", "mp3.m3u8"], in: folder)
        return Output(folder: folder)
    }

    static func output() async throws -> Output { try await shared.value }

    /// Runs ffmpeg (or ffprobe) in `folder` to its end; returns its standard output.
    @discardableResult
    static func ffmpeg(_ arguments: [String], in folder: URL, tool: String = "ffmpeg") throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/\(tool)")
        process.arguments = (tool == "ffmpeg" ? ["-hide_banner", "-loglevel", "error", "-nostdin", "-y"] : ["-v", "error"]) + arguments
        process.currentDirectoryURL = folder
        let output = ChildProcesses.pipe()
        let errors = ChildProcesses.pipe()
        process.standardOutput = output
        process.standardError = errors
        try ChildProcesses.spawn(process)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure.ffmpegFailed(String(decoding: errorText, as: UTF8.self))
        }
        return data
    }
}
