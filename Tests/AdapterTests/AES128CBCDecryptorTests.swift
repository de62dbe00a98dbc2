import AESDecryption
import Foundation
import TestStation
import Testing

/// AES-128-CBC against `openssl enc`, the reference every HLS packager's encryption matches.
@Suite struct AES128CBCDecryptorTests {
    let key: [UInt8] = (0..<16).map { UInt8($0 * 17 & 0xFF) }
    let iv: [UInt8] = [UInt8](repeating: 0, count: 14) + [0x01, 0x02]  // media sequence 258

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    private func opensslEncrypt(_ plaintext: [UInt8], key: [UInt8], iv: [UInt8]) throws -> [UInt8] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("airtap-aes-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let input = folder.appendingPathComponent("plain")
        let output = folder.appendingPathComponent("cipher")
        try Data(plaintext).write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["enc", "-aes-128-cbc", "-K", hex(key), "-iv", hex(iv), "-in", input.path, "-out", output.path]
        try ChildProcesses.spawn(process)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return [UInt8](try Data(contentsOf: output))
    }

    @Test(arguments: [0, 1, 15, 16, 17, 4096, 100_003])
    func decryptsWhatOpenSSLEncrypted(length: Int) throws {
        let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let ciphertext = try opensslEncrypt(plaintext, key: key, iv: iv)
        #expect(ciphertext.count == (length / 16 + 1) * 16)
        #expect(try AES128CBCDecryptor.decrypt(ciphertext, key: key, iv: iv) == plaintext)

        // Drip-fed in uneven chunks, as a transfer delivers it.
        let decryptor = try AES128CBCDecryptor(key: key, iv: iv)
        var output: [UInt8] = []
        var offset = 0
        var size = 1
        while offset < ciphertext.count {
            let end = min(ciphertext.count, offset + size)
            output += decryptor.update(ciphertext[offset..<end])
            #expect(output.count <= plaintext.count)
            offset = end
            size = size * 3 % 1000 + 1
        }
        output += try decryptor.finish()
        #expect(output == plaintext)
    }

    @Test func wrongKeyOrCutOffIsAnError() throws {
        let plaintext = [UInt8](repeating: 0x41, count: 1000)
        let ciphertext = try opensslEncrypt(plaintext, key: key, iv: iv)
        var wrongKey = key
        wrongKey[0] ^= 1
        #expect(throws: AESDecryptionError.badPadding) { try AES128CBCDecryptor.decrypt(ciphertext, key: wrongKey, iv: iv) }
        #expect(throws: AESDecryptionError.badPadding) { try AES128CBCDecryptor.decrypt(Array(ciphertext.dropLast(5)), key: key, iv: iv) }
        #expect(throws: AESDecryptionError.badKeyLength(39)) {
            try AES128CBCDecryptor(key: Array("<html>not a key, an error page</html>\n\n".utf8), iv: iv)
        }
        #expect(throws: AESDecryptionError.badIVLength(8)) { try AES128CBCDecryptor(key: key, iv: [0, 0, 0, 0, 0, 0, 0, 1]) }
    }
}
