import AirtapKit
@testable import AirtapRecording
import AirtapTestSupport
import Foundation
import ICYWire
import Synchronization
import Testing

/// What `library scan` and the title lists do with files that are not what they seem: a FIFO
/// never blocks them, a name that is not UTF-8 gets a line.
@Suite struct LibraryScanTests {
    static func makeFIFO(in folder: URL, named name: String) throws -> String {
        let path = folder.appendingPathComponent(name).path
        #expect(mkfifo(path, 0o600) == 0)
        return path
    }

    /// A file the scan listed and that is a FIFO by the time it is read (nobody writes to it):
    /// refused at once, not waited on.
    @Test func aFIFOInPlaceOfAListedFileIsRefusedWithoutWaiting() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = try Self.makeFIFO(in: folder, named: "song.mp3")
        let outcome = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let text: String
            do {
                _ = try AudioFileFingerprint.read(path: fifo, wholeFile: true)
                text = "read"
            } catch {
                text = "\(error)"
            }
            outcome.withLock { $0 = text }
            done.signal()
        }
        // Waited for off the task pool; 60 s is far beyond a refusal that takes microseconds.
        let finished = await withCheckedContinuation { result in
            DispatchQueue.global().async { result.resume(returning: done.wait(timeout: .now() + 60) == .success) }
        }
        if !finished {
            // Free the reader stuck in open(): a writer arrives, then leaves.
            let writer = open(fifo, O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
        }
        #expect(finished, "the read waited on a FIFO")
        let text = outcome.withLock { $0 } ?? ""
        #expect(text.contains("not a regular file"), "\(text)")
    }

    /// `--skip FIFO`: one line and exit 1 at start, not a wait for a writer that never comes. The
    /// limit only bounds a hang: under TSan with the whole suite, the child waits its turn for minutes.
    @Test(.waitingForChildren) func aTitleListThatIsAFIFOIsRefusedAtStart() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = try Self.makeFIFO(in: folder, named: "never.txt")
        let result = try await AirtapBinary.run(["record", "http://127.0.0.1:9/", "--retries", "0", "--out", folder.path + "/out",
                                                 "--no-library", "--skip", fifo])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("not a regular file"), "\(result.stderr)")
    }

    /// The index keeps paths as text: a file whose name is not UTF-8 cannot be in it, and the
    /// scan says so in a line with the name escaped, instead of passing over it in silence.
    /// A scan reads each file with ingest's own container reader: its title, artist and album
    /// from an MP3's ID3 tag or an Ogg link's comments, its codec and its length.
    @Test(arguments: [("mp3", AudioCodec.mp3, ["-c:a", "libmp3lame", "-id3v2_version", "3"]),
                      ("ogg", AudioCodec.vorbis, ["-c:a", "libvorbis"]),
                      ("opus", AudioCodec.opus, ["-c:a", "libopus"])])
    func aFileSaysWhatItIs(ext: String, codec: AudioCodec, encoder: [String]) async throws {
        let folder = try AirtapBinary.temporaryFolder()
        let name = "song.\(ext)"
        try await Task.detached {
            try runFFmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=4", "-ac", "2"] + encoder +
                          ["-metadata", "title=A Tune", "-metadata", "artist=The Band", "-metadata", "album=The Album", name],
                          in: folder)
        }.value
        let summary = try AudioFileFingerprint.read(path: folder.appendingPathComponent(name).path, wholeFile: true)
        #expect(summary.title == "A Tune")
        #expect(summary.artist == "The Band")
        #expect(summary.album == "The Album")
        #expect(summary.codec == codec)
        #expect(abs(summary.seconds - 4) < 0.1, "\(summary.seconds) s")
        #expect(!summary.fingerprint.values.isEmpty)
    }

    @Test func aNameThatIsNotUTF8IsSkippedWithALine() async throws {
        let folder = try AirtapBinary.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let music = folder.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        let name: [UInt8] = Array("bad".utf8) + [0xFF, 0x1B] + Array("name.mp3".utf8)
        let path: [CChar] = (Array(music.path.utf8) + [0x2F] + name + [0]).map { CChar(bitPattern: $0) }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        #expect(descriptor >= 0)
        close(descriptor)
        let scan = try await AirtapBinary.run(["library", "scan", music.path, "--library", folder.path + "/library.sqlite"])
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(scan.stderr == "airtap: skipped \(music.path)/bad\\xFF\\ename.mp3: its name is not UTF-8\n", "\(scan.stderr)")
        #expect(scan.stdout.contains("indexed 0 files"), "\(scan.stdout)")
    }
}
