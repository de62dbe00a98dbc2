import CCrypto

/// Why a segment cannot be decrypted.
package enum AESDecryptionError: Error, Sendable, Hashable {
    /// The key is not 16 bytes (a key URI that answered with an HTML page, say).
    case badKeyLength(Int)
    case badIVLength(Int)
    /// The last block's PKCS#7 padding is wrong, or the ciphertext is not whole blocks: a wrong
    /// key or IV, or a cut-off segment.
    case badPadding
    /// libcrypto could not set up the cipher.
    case cipherUnavailable
}

/// AES-128-CBC decryption with PKCS#7 padding (RFC 8216 4.3.2.4, `METHOD=AES-128`), drip-fed:
/// ciphertext in as it arrives, plaintext out as blocks complete, the padding checked at the end.
///
/// OpenSSL's libcrypto does the cipher (libcurl links it already, so it costs no new library at
/// run time and no build time, unlike swift-crypto's BoringSSL). Not Sendable: the cipher context
/// is owned by whichever thread feeds the segment.
package final class AES128CBCDecryptor {
    private let context: OpaquePointer

    package static let keyLength = 16
    package static let blockLength = 16

    package init(key: [UInt8], iv: [UInt8]) throws(AESDecryptionError) {
        guard key.count == Self.keyLength else { throw .badKeyLength(key.count) }
        guard iv.count == Self.blockLength else { throw .badIVLength(iv.count) }
        guard let context = EVP_CIPHER_CTX_new() else { throw .cipherUnavailable }
        self.context = context
        guard EVP_DecryptInit_ex(context, EVP_aes_128_cbc(), nil, key, iv) == 1 else { throw .cipherUnavailable }
    }

    deinit {
        EVP_CIPHER_CTX_free(context)
    }

    /// Decrypts what it can of `ciphertext`; libcrypto holds back the last block until `finish`
    /// (it may be the padded one). The output is at most `ciphertext.count + 16` bytes.
    package func update(_ ciphertext: some Collection<UInt8>) -> [UInt8] {
        let input = Array(ciphertext)
        guard !input.isEmpty else { return [] }
        var output = [UInt8](repeating: 0, count: input.count + Self.blockLength)
        var written: Int32 = 0
        // Chunks from one transfer never come near Int32's range; split anyway rather than trust it.
        var produced = 0
        var offset = 0
        while offset < input.count {
            let count = min(input.count - offset, 1 << 30)
            let ok = input.withUnsafeBufferPointer { source in
                output.withUnsafeMutableBufferPointer { target in
                    EVP_DecryptUpdate(context, target.baseAddress! + produced, &written, source.baseAddress! + offset, Int32(count))
                }
            }
            if ok != 1 { break }
            produced += Int(written)
            offset += count
        }
        output.removeLast(output.count - produced)
        return output
    }

    /// The end of the segment: the last block, its padding removed.
    package func finish() throws(AESDecryptionError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Self.blockLength)
        var written: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer { EVP_DecryptFinal_ex(context, $0.baseAddress!, &written) }
        guard ok == 1 else { throw .badPadding }
        output.removeLast(output.count - Int(written))
        return output
    }

    /// A whole segment at once.
    package static func decrypt(_ ciphertext: [UInt8], key: [UInt8], iv: [UInt8]) throws(AESDecryptionError) -> [UInt8] {
        let decryptor = try AES128CBCDecryptor(key: key, iv: iv)
        return decryptor.update(ciphertext) + (try decryptor.finish())
    }
}
