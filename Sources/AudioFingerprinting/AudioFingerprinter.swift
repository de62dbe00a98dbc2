import CChromaprint

/// Chromaprint's raw fingerprint of a piece of audio: one 32-bit value per item (about 0.124 s),
/// each bit one classifier's answer over a window of the chroma spectrum.
package struct Fingerprint: Sendable, Hashable {
    package let values: [UInt32]

    package init(values: [UInt32]) {
        self.values = values
    }

    /// Seconds of audio one value stands for (Chromaprint's default algorithm: 4096/3 samples at 11025 Hz).
    package static let itemSeconds = 4096.0 / 3.0 / 11025.0

    /// Little-endian bytes, four per value, for storage.
    package var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(values.count * 4)
        for value in values {
            bytes.append(UInt8(truncatingIfNeeded: value))
            bytes.append(UInt8(truncatingIfNeeded: value >> 8))
            bytes.append(UInt8(truncatingIfNeeded: value >> 16))
            bytes.append(UInt8(truncatingIfNeeded: value >> 24))
        }
        return bytes
    }

    /// From `bytes`; nil when the length is not a whole number of values.
    package init?(bytes: [UInt8]) {
        guard bytes.count % 4 == 0 else { return nil }
        var values: [UInt32] = []
        values.reserveCapacity(bytes.count / 4)
        var index = 0
        while index < bytes.count {
            values.append(UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24)
            index += 4
        }
        self.values = values
    }
}

/// Why a fingerprint could not be made.
package struct FingerprintError: Error, Sendable, Hashable, CustomStringConvertible {
    package let description: String
}

/// Feeds decoded 16-bit PCM to Chromaprint and returns the raw fingerprint. Owns a C context:
/// used from one thread, so not Sendable. Chromaprint resamples to 11025 Hz mono itself.
package final class AudioFingerprinter {
    private let chromaprint: ChromaprintLibrary
    private let context: OpaquePointer
    /// Samples (per channel) fed so far, and how many are enough: Chromaprint's own tools stop
    /// at two minutes, which tells songs apart and bounds the work per track.
    private var fedFrames = 0
    private var format: (sampleRate: Int, channels: Int)?
    package let maxSeconds: Double

    /// Throws when libchromaprint cannot be loaded (it is opened on first use) or will not start.
    package init(maxSeconds: Double = 120) throws(FingerprintError) {
        let chromaprint = try ChromaprintLibrary.shared.get()
        guard let context = chromaprint.new(ChromaprintLibrary.defaultAlgorithm) else {
            throw FingerprintError(description: "Chromaprint could not start")
        }
        self.chromaprint = chromaprint
        self.context = context
        self.maxSeconds = maxSeconds
    }

    deinit {
        chromaprint.free(context)
    }

    /// Whether `maxSeconds` of audio arrived: the caller can stop decoding.
    package var hasEnough: Bool {
        guard let format else { return false }
        return Double(fedFrames) >= maxSeconds * Double(format.sampleRate)
    }

    /// Seconds of audio fed so far.
    package var seconds: Double {
        guard let format, format.sampleRate > 0 else { return 0 }
        return Double(fedFrames) / Double(format.sampleRate)
    }

    /// Interleaved samples; the format must stay the same for one fingerprint (a change ends
    /// the audio used: the fingerprint covers the first format's part).
    package func feed(sampleRate: Int, channels: Int, _ samples: UnsafeBufferPointer<Int16>) throws(FingerprintError) {
        guard channels > 0, sampleRate > 0, !hasEnough else { return }
        if let format {
            guard format.sampleRate == sampleRate, format.channels == channels else { return }
        } else {
            guard chromaprint.start(context, Int32(sampleRate), Int32(channels)) == 1 else {
                throw FingerprintError(description: "Chromaprint refused \(sampleRate) Hz, \(channels) channels")
            }
            format = (sampleRate, channels)
        }
        let wanted = Int(maxSeconds * Double(sampleRate)) - fedFrames
        let frames = min(samples.count / channels, wanted)
        guard frames > 0, let base = samples.baseAddress else { return }
        guard chromaprint.feed(context, base, Int32(frames * channels)) == 1 else {
            throw FingerprintError(description: "Chromaprint could not take the audio")
        }
        fedFrames += frames
    }

    /// The fingerprint of what was fed; empty when too little audio arrived for one item.
    package func finish() throws(FingerprintError) -> Fingerprint {
        guard format != nil else { return Fingerprint(values: []) }
        guard chromaprint.finish(context) == 1 else { throw FingerprintError(description: "Chromaprint could not finish") }
        var raw: UnsafeMutablePointer<UInt32>?
        var size: Int32 = 0
        guard chromaprint.rawFingerprint(context, &raw, &size) == 1 else {
            throw FingerprintError(description: "Chromaprint gave no fingerprint")
        }
        defer { chromaprint.dealloc(UnsafeMutableRawPointer(raw)) }
        guard let raw, size > 0 else { return Fingerprint(values: []) }
        return Fingerprint(values: Array(UnsafeBufferPointer(start: raw, count: Int(size))))
    }
}
