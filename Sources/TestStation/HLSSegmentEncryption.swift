import CCrypto

/// AES-128-CBC with PKCS#7 padding, how HLS `METHOD=AES-128` segments are encrypted (RFC 8216
/// 4.3.2.4), through OpenSSL's libcrypto: the station encrypts what airtap's AESDecryption and
/// ffmpeg decrypt.
enum HLSSegmentEncryption {
    /// The key a station serves at its key URI: 16 bytes, fixed so tests can reproduce it.
    package static let key: [UInt8] = (0..<16).map { UInt8(0xA0 | $0) }

    /// Encrypts `plaintext`; `iv` is 16 bytes. Nil only if libcrypto cannot set up the cipher.
    package static func encrypt(_ plaintext: [UInt8], key: [UInt8] = key, iv: [UInt8]) -> [UInt8]? {
        guard key.count == 16, iv.count == 16, let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        guard EVP_EncryptInit_ex(context, EVP_aes_128_cbc(), nil, key, iv) == 1 else { return nil }
        var output = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0
        var total = 0
        let updated = output.withUnsafeMutableBufferPointer { target in
            plaintext.withUnsafeBufferPointer { source in
                EVP_EncryptUpdate(context, target.baseAddress, &written, source.baseAddress ?? UnsafePointer(target.baseAddress!), Int32(source.count))
            }
        }
        guard updated == 1 else { return nil }
        total = Int(written)
        let finished = output.withUnsafeMutableBufferPointer { target in
            EVP_EncryptFinal_ex(context, target.baseAddress! + total, &written)
        }
        guard finished == 1 else { return nil }
        total += Int(written)
        return Array(output.prefix(total))
    }

    /// The IV RFC 8216 5.2 implies when the key tag gives none: the media sequence number, big-endian.
    package static func iv(forSequence sequence: Int) -> [UInt8] {
        let value = UInt64(truncatingIfNeeded: sequence)
        return [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64($0))) }
    }
}
