import AudioDecoding
import CFAAD2

/// Decodes ADTS frames (AAC LC, HE-AAC with SBR, HE-AAC v2 with PS) to 16-bit interleaved PCM
/// with FAAD2.
///
/// The output format comes from FAAD2's frame info, never from the ADTS header: SBR (and FAAD2's
/// implicit-SBR guess for any LC stream at 24 kHz or less) doubles the rate, PS turns a mono core
/// into stereo. Multichannel streams are downmixed to stereo. FAAD2 holds one frame back (the
/// first frame of its life produces no samples): this adapter hands out a frame of silence in its
/// place, so every frame in gives one frame's worth out, as with mpg123, and frame n's samples
/// start at output sample n * samplesPerFrame. The player's title positions and the split
/// search's frame levels rest on that count. The cost is one frame of latency at the start
/// (23 ms for LC at 44.1 kHz), which is the encoder's priming in every AAC stream anyway.
/// One decoder per stream; use it from one thread.
package final class AACDecoder: AudioDecoder {
    private var handle: NeAACDecHandle
    private var isInitialised = false
    /// The first frame after `NeAACDecInit` decodes to nothing; its place is filled with silence.
    private var owesPrimingFrame = false
    private var silence: [Int16] = []
    package private(set) var format: PCMFormat?
    /// What the last decoded frame was (profile, core and output rate); nil before the first.
    package private(set) var lastFrame: AACFrameInfo?
    /// Frames FAAD2 reported an error for and that were skipped (no samples).
    package private(set) var skippedFrames = 0
    private var consecutiveErrors = 0
    /// The packet copied into a zero-padded buffer: FAAD2's bit reader may look a little past the
    /// bytes it is given, and a stranger's frame must not make it read outside our memory.
    private var input: [UInt8]

    /// An ADTS frame is at most 8191 bytes (13-bit length); the padding covers FAAD2's read-ahead.
    package static let maximumFrameLength = 8191
    private static let inputPadding = Int(FAAD_MIN_STREAMSIZE) * 8
    /// After this many frames in a row that FAAD2 cannot decode the stream is beyond resync.
    private static let errorLimit = 64
    /// 2048 samples per channel (SBR doubles the 1024 of a frame), stereo after the downmix;
    /// PS and 7.1 still fit in eight channels. More than that from the library is not believed.
    private static let maximumSamplesPerCall = 2048 * 8

    package init() throws(DecoderError) {
        input = [UInt8](repeating: 0, count: Self.maximumFrameLength + Self.inputPadding)
        handle = try Self.openHandle()
    }

    deinit {
        NeAACDecClose(handle)
    }

    private static func openHandle() throws(DecoderError) -> NeAACDecHandle {
        guard let handle = NeAACDecOpen() else {
            throw DecoderError(.unavailable, "faad2: cannot make a decoder")
        }
        guard let config = NeAACDecGetCurrentConfiguration(handle) else {
            NeAACDecClose(handle)
            throw DecoderError(.unavailable, "faad2: no configuration")
        }
        config.pointee.outputFormat = UInt8(FAAD_FMT_16BIT)
        // 5.1 and 7.1 come out as stereo: the player and the meter want at most two channels.
        config.pointee.downMatrix = 1
        guard NeAACDecSetConfiguration(handle, config) == 1 else {
            NeAACDecClose(handle)
            throw DecoderError(.unavailable, "faad2: configuration refused")
        }
        return handle
    }

    /// Forgets the stream so far: the next packet initialises a fresh decoder (FAAD2 has no reset
    /// that also forgets the stream's configuration). The format is kept until the next frame's.
    package func reset() {
        guard isInitialised, let fresh = try? Self.openHandle() else { return }
        NeAACDecClose(handle)
        handle = fresh
        isInitialised = false
        consecutiveErrors = 0
    }

    package func decode(_ packet: UnsafeRawBufferPointer, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) throws(DecoderError) {
        // The framer hands over whole frames only; anything longer is not an ADTS frame.
        guard packet.count >= 7, packet.count <= Self.maximumFrameLength else {
            try countError()
            return
        }
        let count = packet.count
        input.withUnsafeMutableBytes { buffer in
            buffer.copyMemory(from: packet)
            // Zero what the previous (longer) frame left behind in the padding.
            let padding = UnsafeMutableRawBufferPointer(rebasing: buffer[count..<min(buffer.count, count + Self.inputPadding)])
            padding.initializeMemory(as: UInt8.self, repeating: 0)
        }
        if !isInitialised {
            var rate: UInt = 0
            var channels: UInt8 = 0
            let result = input.withUnsafeMutableBufferPointer { buffer in
                NeAACDecInit(handle, buffer.baseAddress, UInt(count), &rate, &channels)
            }
            guard result >= 0 else {
                try countError()
                return
            }
            isInitialised = true
            owesPrimingFrame = true
        }
        var info = NeAACDecFrameInfo()
        let samples = input.withUnsafeMutableBufferPointer { buffer in
            NeAACDecDecode(handle, &info, buffer.baseAddress, UInt(count))
        }
        guard info.error == 0 else {
            try countError()
            return
        }
        consecutiveErrors = 0
        let channels = Int(info.channels)
        let sampleCount = Int(info.samples)
        let frame = AACFrameInfo(info)
        lastFrame = frame
        guard let samples, sampleCount > 0 else {
            if owesPrimingFrame { emitPrimingSilence(info, body) }
            return
        }
        owesPrimingFrame = false
        guard (1...8).contains(channels), sampleCount <= Self.maximumSamplesPerCall, sampleCount % channels == 0,
              info.samplerate > 0, info.samplerate <= 192_000 else {
            skippedFrames += 1
            return
        }
        let current = PCMFormat(sampleRate: Int(info.samplerate), channels: channels)
        format = current
        body(current, UnsafeBufferPointer(start: samples.assumingMemoryBound(to: Int16.self), count: sampleCount))
    }

    /// One frame of silence in the format FAAD2 announced for the frame it held back.
    private func emitPrimingSilence(_ info: NeAACDecFrameInfo, _ body: (PCMFormat, UnsafeBufferPointer<Int16>) -> Void) {
        owesPrimingFrame = false
        let channels = Int(info.channels)
        let rate = Int(info.samplerate)
        guard (1...8).contains(channels), rate > 0, rate <= 192_000 else { return }
        // 1024 samples per channel at the core rate; upsampling (SBR, or FAAD2's implicit-SBR
        // guess: sbr 1 and 3) doubles both the rate and the count; downsampled SBR (2) does not.
        let perChannel = info.sbr == 1 || info.sbr == 3 ? 2048 : 1024
        let count = min(perChannel * min(channels, 2), Self.maximumSamplesPerCall)
        let outputChannels = min(channels, 2)
        if silence.count < count { silence = [Int16](repeating: 0, count: count) }
        let current = PCMFormat(sampleRate: rate, channels: outputChannels)
        format = current
        silence.withUnsafeBufferPointer { body(current, UnsafeBufferPointer(rebasing: $0[..<count])) }
    }

    private func countError() throws(DecoderError) {
        skippedFrames += 1
        consecutiveErrors += 1
        if consecutiveErrors >= Self.errorLimit {
            consecutiveErrors = 0
            throw DecoderError(.malformed, "faad2: \(Self.errorLimit) frames in a row did not decode")
        }
    }
}

/// What FAAD2 says about one decoded frame: the profile and the rates a probe shows.
package struct AACFrameInfo: Sendable, Hashable {
    package enum Profile: String, Sendable, Hashable {
        case lc = "AAC LC", he = "HE-AAC", heV2 = "HE-AAC v2", main = "AAC Main", ltp = "AAC LTP", other = "AAC"
    }

    /// MPEG-4 object type of the core (2 is LC).
    package let objectType: Int
    /// Whether SBR is on, from the stream or FAAD2's implicit-SBR assumption.
    package let hasSBR: Bool
    /// Whether parametric stereo is on.
    package let hasPS: Bool
    package let outputSampleRate: Int
    package let outputChannels: Int

    package init(objectType: Int, hasSBR: Bool, hasPS: Bool, outputSampleRate: Int, outputChannels: Int) {
        self.objectType = objectType
        self.hasSBR = hasSBR
        self.hasPS = hasPS
        self.outputSampleRate = outputSampleRate
        self.outputChannels = outputChannels
    }

    init(_ info: NeAACDecFrameInfo) {
        // sbr: 0 off, 1 on (upsampled), 2 on (downsampled), 3 off but upsampled.
        self.init(
            objectType: Int(info.object_type),
            hasSBR: info.sbr == 1 || info.sbr == 2,
            hasPS: info.ps != 0,
            outputSampleRate: Int(info.samplerate),
            outputChannels: Int(info.channels)
        )
    }

    /// LC, HE (SBR) or HE v2 (SBR and PS). An LC stream at 24 kHz or less that FAAD2 upsamples on
    /// the guess of implicit SBR but finds no SBR data in reports sbr 3 ("off, upsampled"): LC.
    package var profile: Profile {
        if hasPS { return .heV2 }
        if hasSBR { return .he }
        switch objectType {
        case 2: return .lc
        case 1: return .main
        case 4: return .ltp
        default: return .other
        }
    }
}
